// Who may watch the pool dashboard. In development (NODE_ENV not 'production') anyone who can
// reach the app, which listens on 127.0.0.1; in production only a browser that signs in with
// DASHBOARD_PASSWORD (HTTP Basic), and nobody at all when it is not set.
import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

@Injectable()
export class DashboardGuard implements CanActivate {
  constructor(
    private readonly production: boolean,
    private readonly password: string | undefined,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (!this.production) return true;
    if (this.password === undefined || this.password === '') return false; // 403: no way in
    const http = context.switchToHttp();
    const given = Buffer.from(
      /^Basic (.+)$/.exec(http.getRequest<IncomingMessage>().headers.authorization ?? '')?.[1] ?? '',
      'base64',
    ).toString();
    const expected = Buffer.from(`ops:${this.password}`);
    if (given.length === expected.length && timingSafeEqual(Buffer.from(given), expected)) return true;
    // Ask the browser for the password (the page's stream then sends it on its own).
    http.getResponse<ServerResponse>().setHeader('www-authenticate', 'Basic realm="pool dashboard", charset="UTF-8"');
    throw new UnauthorizedException('sign in as ops with DASHBOARD_PASSWORD to see the pool dashboard');
  }
}
