import { Controller, Get, Injectable, Param } from '@nestjs/common';
import type { ClientHttp2Session } from 'node:http2';
import { http2Request, InjectPool, UsePooled, type ConnectionPool } from 'nestjs-shared-pool';

@Injectable()
export class CatalogService {
  constructor(@InjectPool('upstream') private readonly upstream: ConnectionPool<ClientHttp2Session>) {}

  @UsePooled('upstream', { timeoutMs: 2_000 }) // a session is checked out for the call, then checked in
  async item(id: string): Promise<string> {
    const res = await http2Request(this.upstream.current, { ':path': `/items/${encodeURIComponent(id)}` });
    return res.body.toString();
  }
}

@Controller('catalog')
export class CatalogController {
  constructor(private readonly catalog: CatalogService) {}

  @Get(':id')
  async item(@Param('id') id: string) {
    return { id, body: await this.catalog.item(id) };
  }
}
