import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  Controller,
  Get,
  Inject,
  Injectable,
  Module,
  Req,
  Res,
  UseGuards,
  type CanActivate,
  type DynamicModule,
  type ExecutionContext,
  type OnModuleDestroy,
  type Type,
} from '@nestjs/common';
import { PoolCoreModule, PoolRegistry } from '../nest/index.js';
import { dashboardAssets, type DashboardAsset } from './dashboard-assets.js';
import { DashboardFeed } from './dashboard-feed.js';
import {
  resolveDashboardOptions,
  type PoolDashboardOptions,
  type ResolvedDashboardOptions,
} from './dashboard-options.js';
import type { DashboardSnapshot } from './dashboard-snapshot.js';
import { DashboardState, type Watched, type WatchedPool } from './dashboard-state.js';

const DASHBOARD_OPTIONS = Symbol('PoolDashboardOptions');

/** The application's pools and groups, live, and the feed that streams them. */
@Injectable()
export class PoolDashboard implements OnModuleDestroy {
  readonly feed: DashboardFeed;

  constructor(
    registry: PoolRegistry,
    @Inject(DASHBOARD_OPTIONS) readonly options: ResolvedDashboardOptions,
  ) {
    const watched = function* (): Iterable<Watched> {
      for (const name of registry.names()) {
        const group = registry.group(name);
        if (group !== undefined) yield { name, group };
        else {
          const pool = registry.get(name);
          if (pool !== undefined) yield { name, pool: pool as WatchedPool };
        }
      }
    };
    this.feed = new DashboardFeed(new DashboardState(watched, options), options);
  }

  /** What the page shows now. */
  snapshot(): DashboardSnapshot {
    return this.feed.snapshot();
  }

  /** Open pages close at once: `app.close()` does not wait for them. */
  onModuleDestroy(): void {
    this.feed.close();
  }
}

/**
 * A live view of every pool, group, connection, waiter and limiter of the application, at
 * `path` (default `/pools/ui`): a page, its server-sent event stream (`/stream`) and a JSON
 * snapshot (`/snapshot`). Import it once, beside `PoolModule`; guard it with `guards` or
 * `canActivate` (see the README: it is open to anyone who can reach the app otherwise).
 */
@Module({})
export class PoolDashboardModule {
  static forRoot(options: PoolDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: PoolDashboardModule,
      imports: [PoolCoreModule],
      controllers: [dashboardController(resolved)],
      providers: [{ provide: DASHBOARD_OPTIONS, useValue: resolved }, PoolDashboard],
      exports: [PoolDashboard],
    };
  }
}

/** The controller at the configured path, behind the configured guards. */
function dashboardController(o: ResolvedDashboardOptions): Type {
  @Controller(o.path)
  class PoolDashboardController {
    constructor(@Inject(PoolDashboard) private readonly dashboard: PoolDashboard) {}

    @Get()
    page(@Req() req: unknown, @Res() res: unknown): void {
      const { req: request, res: response } = rawOf(req, res);
      send(response, dashboardAssets().page(pagePath(request.url, o.path)), {
        'content-security-policy':
          "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        'referrer-policy': 'no-referrer',
      });
    }

    @Get('dashboard.js')
    script(@Req() req: unknown, @Res() res: unknown): void {
      send(rawOf(req, res).res, dashboardAssets().script);
    }

    @Get('dashboard.css')
    style(@Req() req: unknown, @Res() res: unknown): void {
      send(rawOf(req, res).res, dashboardAssets().style);
    }

    @Get('stream')
    stream(@Req() req: unknown, @Res() res: unknown): void {
      const raw = rawOf(req, res);
      this.dashboard.feed.join(raw.req, raw.res);
    }

    @Get('snapshot')
    snapshot(): DashboardSnapshot {
      return this.dashboard.snapshot();
    }
  }
  const guards: (CanActivate | Type<CanActivate>)[] = [...o.guards];
  const check = o.canActivate;
  if (check !== undefined) guards.push({ canActivate: (context: ExecutionContext) => check(context) });
  if (guards.length > 0) UseGuards(...guards)(PoolDashboardController);
  return PoolDashboardController;
}

/** Segments of letters, digits and - _ . ~, none of them `.` or `..`. */
const PLAIN_PATH = /^(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9\-_.~]+)+$/;

/**
 * Where the page was asked for, as its links should point: the path of the request (a global
 * prefix included), never an origin. A request line in absolute form (`GET http://evil.example/pools/ui`)
 * or with a doubled slash (`//evil.example/...`, an origin to a browser) gives the configured path.
 */
export function pagePath(url: string | undefined, configured: string): string {
  const path = (url ?? '').split(/[?#]/)[0]!.replace(/\/+$/, '');
  return PLAIN_PATH.test(path) && path.endsWith(configured) ? path : configured;
}

/** Node's request and response under Express's or Fastify's (a Fastify reply is hijacked: we answer on the raw one). */
function rawOf(req: unknown, res: unknown): { req: IncomingMessage; res: ServerResponse } {
  const reply = res as { raw?: ServerResponse; hijack?: () => void };
  if (reply.raw !== undefined) {
    reply.hijack?.();
    return { req: (req as { raw: IncomingMessage }).raw, res: reply.raw };
  }
  return { req: req as IncomingMessage, res: res as ServerResponse };
}

function send(res: ServerResponse, asset: DashboardAsset, headers: Record<string, string> = {}): void {
  res
    .writeHead(200, {
      'content-type': asset.type,
      'content-length': String(asset.body.length),
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      ...headers,
    })
    .end(asset.body);
}
