import { Controller, Get, Headers, Param } from '@nestjs/common';
import type { ClientHttp2Session } from 'node:http2';
import { http2Request, InjectPool, UsePooled, type ConnectionPool } from 'nestjs-shared-pool';

/** A proxied call over shared HTTP/2 sessions, limited per user (`x-user-id`). */
@Controller('upstream')
export class UpstreamController {
  constructor(@InjectPool('upstream') private readonly upstream: ConnectionPool<ClientHttp2Session>) {}

  @Get(':item')
  @UsePooled('upstream', {
    key: (user: unknown) => (typeof user === 'string' && user !== '' ? user : 'anonymous'),
    retry: { attempts: 2 },
  })
  async item(@Headers('x-user-id') _user: string | undefined, @Param('item') item: string) {
    const res = await http2Request(this.upstream.current, { ':path': `/items/${encodeURIComponent(item)}` });
    return { status: res.status, upstream: JSON.parse(res.body.toString()) as unknown };
  }
}
