import { Controller, Get, Param } from '@nestjs/common';
import type { ClientHttp2Session } from 'node:http2';
import { http2Request, PooledConnection, UsePooled } from 'nestjs-shared-pool';

/** Calls per tenant over the `tenants` pool group: each tenant is a member with its own sessions, all within one budget. */
@Controller('tenants')
export class TenantsController {
  @Get(':tenant/items/:item')
  @UsePooled('tenants', { key: (tenant: unknown) => String(tenant) })
  async item(
    @Param('tenant') tenant: string,
    @Param('item') item: string,
    @PooledConnection() session?: ClientHttp2Session,
  ) {
    const res = await http2Request(session!, { ':path': `/items/${encodeURIComponent(item)}`, 'x-tenant': tenant });
    return { tenant, status: res.status, upstream: JSON.parse(res.body.toString()) as unknown };
  }
}
