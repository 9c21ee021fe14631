import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DashboardSnapshot } from './dashboard-snapshot.js';
import type { DashboardState } from './dashboard-state.js';

/** The feed's settings. */
export interface FeedSettings {
  readonly intervalMs: number;
  readonly maxViewers: number;
  readonly slowViewerMs: number;
}

/** How the feed itself is doing (`PoolDashboard.feed.stats()`). */
export interface FeedStats {
  /** Pages open now. */
  readonly viewers: number;
  /** Whether the tick runs (a page is open). */
  readonly running: boolean;
  /** Snapshots built since the start: one per tick, whatever the number of viewers. */
  readonly built: number;
  /** Ticks not sent to a viewer whose socket was full, since the start. */
  readonly dropped: number;
  /** Viewers disconnected for taking nothing for `slowViewerMs`. */
  readonly cutOff: number;
  /** Bytes written but not yet taken by the viewers' sockets, now. */
  readonly buffered: number;
  /** Time spent building snapshots and writing them to viewers since the start, ms: the dashboard's own cost. */
  readonly busyMs: number;
}

/** Viewers written to in one turn of the event loop. */
const WRITES_PER_TURN = 50;

/** An open page's stream. */
interface Viewer {
  readonly res: ServerResponse;
  /** When its socket filled up (it took less than we sent), or undefined while it keeps up. */
  fullSince: number | undefined;
  /** Ticks skipped because it could not take them. */
  dropped: number;
}

/**
 * The live stream of the dashboard: server-sent events, one snapshot per tick shared by every
 * open page. The tick runs only while a page is open. A page that cannot keep up misses ticks
 * (nothing is queued for it beyond one write), and is disconnected once it has taken nothing for
 * `slowViewerMs`; a page that goes away leaves no listener behind.
 */
export class DashboardFeed {
  readonly #viewers = new Set<Viewer>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /**
   * The last snapshot and its event, built at most once a tick. The event is encoded once and the
   * same bytes go to every viewer: a socket keeps a reference to what it could not send yet, not a
   * copy, so 500 viewers cost one encoding and a viewer that reads nothing holds no bytes of its own.
   */
  #last: { at: number; snapshot: DashboardSnapshot; event: Buffer } | undefined;
  #built = 0;
  #dropped = 0;
  #cutOff = 0;
  #busyMs = 0;

  constructor(
    private readonly state: DashboardState,
    private readonly settings: FeedSettings,
    private readonly now: () => number = Date.now,
  ) {}

  stats(): FeedStats {
    let buffered = 0;
    for (const viewer of this.#viewers) buffered += viewer.res.writableLength;
    return {
      viewers: this.#viewers.size,
      running: this.#timer !== undefined,
      built: this.#built,
      dropped: this.#dropped,
      cutOff: this.#cutOff,
      buffered,
      busyMs: this.#busyMs,
    };
  }

  /** The current snapshot, built now unless this tick's is fresh. For one-off reads (`/snapshot`). */
  snapshot(): DashboardSnapshot {
    return this.#current().snapshot;
  }

  /** Streams to `res` until its client leaves or the feed closes. */
  join(req: IncomingMessage, res: ServerResponse): void {
    if (this.#closed || this.#viewers.size >= this.settings.maxViewers) {
      const why = this.#closed
        ? 'the application is shutting down'
        : `${this.settings.maxViewers} pages are watching already (maxViewers)`;
      res
        .writeHead(503, {
          'content-type': 'text/plain; charset=utf-8',
          'retry-after': '5',
          'cache-control': 'no-store',
        })
        .end(`The pool dashboard takes no more viewers now: ${why}.`);
      return;
    }
    const viewer: Viewer = { res, fullSince: undefined, dropped: 0 };
    this.#viewers.add(viewer);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(`retry: ${Math.max(1_000, this.settings.intervalMs * 2)}\n\n`);
    const leave = () => this.#leave(viewer);
    req.once('close', leave);
    res.once('close', leave);
    if (this.#timer === undefined) {
      this.state.start();
      this.#timer = setInterval(() => this.#tick(), this.settings.intervalMs);
      this.#timer.unref();
    }
    this.#send(viewer, this.#current().event);
  }

  /** Ends every stream and stops the tick (the application is closing). */
  close(): void {
    this.#closed = true;
    for (const viewer of [...this.#viewers]) viewer.res.end();
    this.#viewers.clear();
    this.#stop();
  }

  #leave(viewer: Viewer): void {
    if (!this.#viewers.delete(viewer)) return;
    if (!viewer.res.writableEnded) viewer.res.end();
    if (this.#viewers.size === 0) this.#stop();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#last = undefined;
    this.state.stop();
  }

  #current(): { snapshot: DashboardSnapshot; event: Buffer } {
    const now = this.now();
    if (this.#last !== undefined && now - this.#last.at < this.settings.intervalMs / 2) return this.#last;
    const snapshot = this.state.snapshot(this.#viewers.size, this.#busyMs);
    this.#built++;
    this.#last = { at: now, snapshot, event: Buffer.from(`event: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n`) };
    if (this.#timer === undefined) this.state.stop(); // a one-off read watches nothing afterwards
    return this.#last;
  }

  #tick(): void {
    const began = performance.now();
    let event: Buffer;
    try {
      event = this.#current().event;
    } catch {
      // A snapshot that could not be built this tick: the pages keep the last one; the next tick tries again.
      return;
    } finally {
      this.#busyMs += performance.now() - began;
    }
    this.#sendFrom([...this.#viewers], 0, event);
  }

  /**
   * Writes `event` to `viewers` from `from` on, WRITES_PER_TURN of them a turn: with hundreds of
   * viewers, the writes of one tick would otherwise hold the event loop for milliseconds at once.
   */
  #sendFrom(viewers: readonly Viewer[], from: number, event: Buffer): void {
    const began = performance.now();
    const now = this.now();
    const end = Math.min(from + WRITES_PER_TURN, viewers.length);
    for (let i = from; i < end; i++) {
      const viewer = viewers[i]!;
      if (!this.#viewers.has(viewer)) continue; // left since the tick began
      if (viewer.fullSince === undefined) {
        this.#send(viewer, event);
        continue;
      }
      viewer.dropped++;
      this.#dropped++;
      if (now - viewer.fullSince < this.settings.slowViewerMs) continue;
      this.#cutOff++;
      // Its socket is full: end() would wait behind what it never takes.
      viewer.res.destroy();
      this.#leave(viewer);
    }
    this.#busyMs += performance.now() - began;
    if (end < viewers.length && !this.#closed) setImmediate(() => this.#sendFrom(viewers, end, event));
  }

  /** Writes unless the viewer's socket is full; a full one waits for its drain and misses ticks meanwhile. */
  #send(viewer: Viewer, event: Buffer): void {
    if (viewer.res.write(event)) return;
    viewer.fullSince = this.now();
    viewer.res.once('drain', () => (viewer.fullSince = undefined));
  }
}
