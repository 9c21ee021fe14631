import type { CanActivate, ExecutionContext, Type } from '@nestjs/common';
import { is, keysOf, OptionReader, type Rule } from '../core/index.js';

/** Options of `PoolDashboardModule.forRoot()`. */
export interface PoolDashboardOptions {
  /** Where the page is served; the stream is `${path}/stream`, one snapshot `${path}/snapshot`. Default `/pools/ui`. */
  path?: string;
  /** How often the shared snapshot is built while a page is open, ms. Default 500; at least 100. */
  intervalMs?: number;
  /**
   * Guards that decide who may see the page, the stream and the snapshot: Nest guards (classes
   * or instances), run as on any route. The app's global guards apply too. Default: none, so
   * give one (or `canActivate`) for anything but a developer's machine.
   */
  guards?: (CanActivate | Type<CanActivate>)[];
  /** A guard as a function: refuse with `false` (403) or by throwing an HTTP exception. */
  canActivate?: (context: ExecutionContext) => boolean | Promise<boolean>;
  /** Pages watching at once; past it a new one gets 503. Default 100. */
  maxViewers?: number;
  /** A viewer that has taken nothing for this long (its socket full) is disconnected, ms. Default 30 000. */
  slowViewerMs?: number;
  /** Rows of connections shown per pool, and members per group; the rest are summarised. Default 200 and 1 000. */
  maxConnectionRows?: number;
  maxMemberRows?: number;
}

/** The options with their defaults. */
export interface ResolvedDashboardOptions {
  readonly path: string;
  readonly intervalMs: number;
  readonly guards: (CanActivate | Type<CanActivate>)[];
  readonly canActivate: ((context: ExecutionContext) => boolean | Promise<boolean>) | undefined;
  readonly maxViewers: number;
  readonly slowViewerMs: number;
  readonly maxConnectionRows: number;
  readonly maxMemberRows: number;
}

const KEYS = keysOf<PoolDashboardOptions>({
  path: true,
  intervalMs: true,
  guards: true,
  canActivate: true,
  maxViewers: true,
  slowViewerMs: true,
  maxConnectionRows: true,
  maxMemberRows: true,
});

const urlPath: Rule = {
  says: "a URL path such as '/pools/ui' (segments of letters, digits, - _ . ~; none of them '.' or '..')",
  ok: (v) =>
    typeof v === 'string' &&
    /^\/?(?:(?!\.\.?(?:\/|$))[A-Za-z0-9\-_.~]+\/)*(?!\.\.?$)[A-Za-z0-9\-_.~]*[A-Za-z0-9\-_~]$/.test(v),
};
const guardList: Rule = {
  says: 'an array of Nest guards (classes or instances with canActivate)',
  ok: (v) =>
    Array.isArray(v) &&
    v.every(
      (g) =>
        typeof g === 'function' ||
        (typeof g === 'object' && g !== null && typeof (g as CanActivate).canActivate === 'function'),
    ),
};

/** Checks and defaults the options; a bad one throws a PoolConfigError that names it. */
export function resolveDashboardOptions(options: PoolDashboardOptions = {}): ResolvedDashboardOptions {
  const read = new OptionReader({ subject: 'module', name: 'PoolDashboardModule.forRoot' }, options).only(
    KEYS,
    "the dashboard's options",
  );
  const path = read.get('path', urlPath, '/pools/ui');
  return {
    path: path.startsWith('/') ? path : `/${path}`,
    intervalMs: read.get('intervalMs', is.noted(is.finiteAtLeast(100), 'a few snapshots a second at most'), 500),
    guards: read.get('guards', guardList, []),
    canActivate: read.get('canActivate', is.function),
    maxViewers: read.get('maxViewers', is.whole(1), 100),
    slowViewerMs: read.get('slowViewerMs', is.finiteAtLeast(1), 30_000),
    maxConnectionRows: read.get('maxConnectionRows', is.whole(0), 200),
    maxMemberRows: read.get('maxMemberRows', is.whole(0), 1_000),
  };
}
