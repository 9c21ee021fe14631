/**
 * The pool groups' chaos harness: one seed makes one random schedule of keys (more than
 * `maxMembers`), a faulty connector per key (creates that fail, hang ignoring their abort, or arrive
 * late; closes that fail, take long or hang) and adversarial callers (random holds, deadlines,
 * aborts, failed leases, a `close()` in the middle), runs it against a PoolGroup on virtual time,
 * and checks at every step, counted at the connector:
 * - connections alive at the server (from a create's resolution to the end of its close; a close
 *   that outlasts closeTimeoutMs ends there, as the pool stops waiting) never exceed `maxTotal`,
 *   and neither do the places the group counts;
 * - the group's count of places equals what the connector has under way (creates not ended, and
 *   connections not closed);
 * - an exclusive connection (clientLimit 1) never serves two callers at once;
 * - every acquire settles by its deadline;
 * - after `close()` and the late arrivals: nothing alive, no call pending.
 */
import { PoolClosedError, type Connector, type Lease } from '../../lib/core/index.js';
import { PoolGroup } from '../../lib/groups/pool-group.js';
import type { PoolGroupOptions } from '../../lib/groups/group-options.js';
import { VirtualClock } from '../support/virtual-clock.js';
import { random } from './chaos.js';

export interface GroupChaosResult {
  seed: number;
  violations: string[];
  calls: number;
  connections: number;
}

interface Conn {
  readonly id: number;
  readonly key: string;
  users: number;
}

const pickOf = <V>(rnd: () => number, values: readonly V[]): V => values[Math.floor(rnd() * values.length)]!;

export async function runGroupChaos(seed: number): Promise<GroupChaosResult> {
  const rnd = random(seed);
  const chance = (p: number) => rnd() < p;
  const between = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const clock = new VirtualClock();
  const violations: string[] = [];
  const violate = (what: string) => {
    if (violations.length < 10) violations.push(`t=${clock.now()}: ${what}`);
  };
  const later = (ms: number, fn: () => void) => clock.setTimeout(fn, Math.max(0, ms));

  const maxTotal = between(1, 6);
  const keys = Array.from({ length: between(2, 9) }, (_, i) => `t${i}`);
  const clientLimit = pickOf(rnd, [1, 1, 2, 3]);
  const closeTimeoutMs = between(10, 100);
  const createTimeoutMs = between(20, 200);
  const storm = rnd(); // how faulty the connectors are
  const options: PoolGroupOptions<Conn> = {
    name: `chaos-${seed}`,
    maxTotal,
    maxMembers: chance(0.6) ? between(1, Math.max(1, keys.length - 1)) : Infinity,
    minHoldMs: between(0, 50),
    rebalanceIntervalMs: between(5, 50),
    memberIdleMs: pickOf(rnd, [30, 300, 3_000]),
    clock,
    logger: { warn: () => {}, error: () => {} },
    metrics: false,
    connector: (key) => connectorOf(key),
    member: {
      clientLimit,
      createTimeoutMs,
      closeTimeoutMs,
      acquireTimeoutMs: between(10, 400),
      createBackoffMs: between(1, 20),
      maxCreateBackoffMs: 200,
      breakerFailures: between(1, 5),
      breakerAfterMs: pickOf(rnd, [0, 100]),
    },
  };

  // ---- the faulty connectors, and what the server sees ------------------------------------
  let createsUnderWay = 0; // creates started and not ended
  let alive = 0; // connections resolved and not yet closed (or given up on)
  let made = 0;
  const open = new Set<Conn>();
  const connectorOf = (key: string): Connector<Conn> => ({
    create: () => {
      createsUnderWay++;
      const r = rnd();
      const p = storm * 0.5;
      const settle = (ms: number, fail: boolean) =>
        new Promise<Conn>((resolve, reject) =>
          later(ms, () => {
            createsUnderWay--;
            if (fail) return reject(new Error('connect ECONNREFUSED (chaos)'));
            const conn: Conn = { id: ++made, key, users: 0 };
            alive++;
            open.add(conn);
            resolve(conn);
          }),
        );
      if (r < p * 0.3) return settle(between(0, 30), true);
      if (r < p * 0.4) return new Promise<Conn>(() => {}); // hangs forever, ignoring its abort: its place is never given back
      if (r < p) return settle(between(createTimeoutMs, 2 * createTimeoutMs), false); // late: after its timeout
      return settle(between(0, 40), false);
    },
    close: (conn) => {
      if (!open.delete(conn)) violate(`connection ${conn.id} closed twice`);
      if (conn.users > 0 && !closing) violate(`connection ${conn.id} closed under ${conn.users} caller(s)`);
      let gone = false;
      const end = () => {
        if (gone) return;
        gone = true;
        alive--;
      };
      later(closeTimeoutMs, end); // the pool stops waiting for a close then: the place is given back
      const r = rnd();
      if (r < storm * 0.1) {
        end();
        throw new Error('close failed (chaos)');
      }
      if (r < storm * 0.2) return new Promise<void>(() => {}); // hangs
      return new Promise<void>((resolve) => later(between(0, 2 * closeTimeoutMs), () => (end(), resolve())));
    },
  });

  const group = new PoolGroup<Conn>(options);

  // ---- the callers -------------------------------------------------------------------------
  let closing: Promise<void> | undefined;
  let calls = 0;
  const pending = new Set<{ start: number; timeoutMs: number }>();
  const call = () => {
    calls++;
    const key = pickOf(rnd, keys);
    const timeoutMs = between(5, 400);
    const controller = chance(0.15) ? new AbortController() : undefined;
    if (controller) later(between(0, timeoutMs), () => controller.abort(new Error('aborted (chaos)')));
    const record = { start: clock.now(), timeoutMs };
    pending.add(record);
    group.acquire(key, { timeoutMs, ...(controller ? { signal: controller.signal } : {}) }).then(
      (lease: Lease<Conn>) => {
        pending.delete(record);
        const conn = lease.connection;
        if (conn.key !== key) violate(`a caller of ${key} got a connection of ${conn.key}`);
        if (++conn.users > clientLimit)
          violate(`connection ${conn.id} serves ${conn.users} callers, clientLimit ${clientLimit}`);
        if (!open.has(conn)) violate(`connection ${conn.id} handed out after its close`);
        later(between(0, 80), () => {
          conn.users--;
          if (chance(0.1)) lease.fail(new Error('broken (chaos)'));
          else lease.release();
        });
      },
      (err: unknown) => {
        pending.delete(record);
        if (closing === undefined && err instanceof PoolClosedError) violate('PoolClosedError before close()');
      },
    );
  };
  const durationMs = 2_000;
  for (let i = 0, n = between(50, 250); i < n; i++) later(between(0, durationMs), call);
  const closeAt = chance(0.4) ? between(0, durationMs) : durationMs + 1;
  const startClose = () => (closing ??= group.close({ graceMs: pickOf(rnd, [0, 50, 500]) }));
  later(closeAt, startClose);

  // ---- the invariants ------------------------------------------------------------------------
  const check = () => {
    const now = clock.now();
    if (alive > maxTotal) violate(`${alive} connections alive at the server, maxTotal ${maxTotal}`);
    const s = group.stats();
    if (s.total > maxTotal) violate(`the group counts ${s.total} places, maxTotal ${maxTotal}`);
    if (s.total !== createsUnderWay + alive)
      violate(
        `the group counts ${s.total} places, the connectors have ${createsUnderWay} creates under way and ${alive} connections`,
      );
    for (const rec of pending)
      if (now > rec.start + rec.timeoutMs + 1)
        violate(`an acquire still pending ${now - rec.start} ms after its ${rec.timeoutMs} ms deadline`);
  };
  let closed = false;
  for (let t = 0; t <= durationMs + 10; t += 5) {
    await clock.advance(5);
    check();
  }
  void startClose().then(() => (closed = true));
  for (let i = 0; i < 200 && !closed; i++) {
    await clock.advance(10);
    check();
  }
  if (!closed) violate('close() did not settle');
  await clock.advance(3 * createTimeoutMs + 3 * closeTimeoutMs); // late creates arrive and are closed
  check();
  if (alive > 0) violate(`${alive} connection(s) alive after close()`);
  if (pending.size > 0) violate(`${pending.size} acquire(s) never settled`);
  return { seed, violations, calls, connections: made };
}
