// The QoS scenarios that gate in `npm test`. Each runs 10–15 s of virtual time; landmarks say
// what good looks like in absolute terms, not what the group happened to reach:
// - waits: 100 near no wait where the load fits, or at one connect where members must take turns
//   (a place that changes member costs a connect); 0 at about ten connects;
// - overhead: 100 at opening each place once; 0 at about one reconnect per query (per tenth query
//   where a connect costs 500 ms);
// - similarity: 100 at a coefficient of variation of 0.1 across members, 0 at 1.
import type { LoadStream, Measure, Scenario } from './scenario.js';

export const stream = (
  member: string,
  start: number,
  end: number,
  qps: number,
  mean: number,
  spread = 0.5,
): LoadStream => ({
  member,
  start,
  end,
  qps,
  cost: { mean, spread },
});
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

/** A wait percentile: 100 at (about) no wait, 0 at `bad` ms. */
export const wait = (
  percentile: number,
  members: readonly string[],
  good: number,
  bad: number,
  weight: number,
): Measure => ({
  kind: 'latency',
  percentile,
  members,
  weight,
  landmarks: [
    [good, 100],
    [bad, 0],
  ],
});

/** Alike waits across members: CV 0.1 or less scores 100, 1 or more scores 0. */
export const alike = (members: readonly string[], weight: number): Measure => ({
  kind: 'similarity',
  members,
  weight,
  landmarks: [
    [0.1, 100],
    [0.4, 60],
    [1, 0],
  ],
});

/** Connects + disconnects: 100 at the fewest the load needs, 0 at `bad`. */
export const overhead = (least: number, bad: number, weight: number): Measure => ({
  kind: 'overhead',
  weight,
  landmarks: [
    [least, 100],
    [bad, 0],
  ],
});

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'one member, bursts',
    // Bursts in a rhythm: 1 s of load, 1.5 s gaps. The member gives its connections back in the
    // first gap (it cannot know the burst returns: see 'a burst, then quiet'), reconnects at the
    // second burst, learns the gap from that, and keeps its connections from then on. That one
    // round of reconnects (36 connects + disconnects against the 20 of keeping them all along,
    // and the waits of one burst's reconnects) is the price of giving a one-off burst back within
    // a second; the threshold allows that round, not a second one.
    about:
      'one member alone, in bursts with quiet gaps: one round of reconnects, then the member keeps its connections through the gaps',
    maxTotal: 10,
    connect: { mean: 50, spread: 0.2 },
    disconnect: { mean: 5, spread: 0.2 },
    streams: [0, 2_500, 5_000, 7_500].map((t) => stream('solo', t, t + 1_000, 400, 15)),
    measures: [
      wait(95, ['solo'], 1, 50, 2),
      overhead(20, 100, 2),
      {
        kind: 'capacity',
        members: ['solo'],
        weight: 1,
        landmarks: [
          [0, 0],
          [0.5, 100],
        ],
      },
    ],
    threshold: 75,
  },
  {
    name: 'a burst, then quiet',
    about:
      'a steady member at 1/32 of the budget, another at 31/32 for 0.2 s: the burst is served, then its connections go back within half a second',
    maxTotal: 100,
    connect: { mean: 20, spread: 0.2 },
    disconnect: { mean: 5, spread: 0.2 },
    streams: [stream('steady', 0, 4_000, 150, 20), stream('burst', 1_000, 1_200, 4_650, 20)],
    measures: [
      wait(90, ['steady'], 1, 100, 2),
      wait(90, ['burst'], 25, 300, 1),
      overhead(200, 600, 1),
      {
        kind: 'capacity',
        members: ['steady', 'burst'],
        at: 1_700,
        weight: 1,
        // As Gel's simulation scores a burst's end: its pool with a 0.1 s idle collection scores 100.
        label: 'share of maxTotal held 0.5 s after the burst',
        landmarks: [
          [0.1, 100],
          [0.5, 0],
        ],
      },
      {
        kind: 'capacity',
        members: ['steady', 'burst'],
        at: 2_200,
        weight: 2,
        label: 'share of maxTotal held 1 s after the burst',
        landmarks: [
          [0.1, 100],
          [0.5, 0],
        ],
      },
    ],
    threshold: 70,
  },
  {
    name: 'racing for a small budget',
    about: 'five members, equal load, a budget of 4: every member served alike',
    maxTotal: 4,
    connect: { mean: 30, spread: 0.2 },
    disconnect: { mean: 5, spread: 0.2 },
    streams: names('m', 5).map((m) => stream(m, 0, 10_000, 30, 20)),
    measures: [alike(names('m', 5), 3), wait(90, names('m', 5), 30, 300, 2), overhead(8, 2_800, 1)],
    threshold: 80,
  },
  {
    name: 'fast and slow queries',
    about: 'one member runs 2 ms queries, another 60 ms ones: both wait alike for a connection',
    maxTotal: 4,
    connect: { mean: 20, spread: 0.2 },
    disconnect: { mean: 5, spread: 0.2 },
    streams: [stream('fast', 0, 10_000, 400, 2), stream('slow', 0, 10_000, 25, 60)],
    measures: [alike(['fast', 'slow'], 3), wait(90, ['fast', 'slow'], 1, 200, 2), overhead(4, 400, 1)],
    threshold: 65,
  },
  {
    name: 'huge demand beside a rare one',
    about: 'one member keeps 8 of 10 places busy, another calls twice a second: the rare one is served quickly',
    maxTotal: 10,
    connect: { mean: 30, spread: 0.2 },
    disconnect: { mean: 5, spread: 0.2 },
    streams: [stream('busy', 0, 10_000, 800, 10), stream('rare', 0, 10_000, 2, 10)],
    measures: [wait(90, ['rare'], 30, 500, 3), wait(99, ['busy'], 5, 100, 2), overhead(12, 200, 1)],
    threshold: 85,
  },
  {
    name: 'a rare member beside a busy one, costly connects',
    about:
      'one member keeps half of 6 places busy, another calls twice a second; connects take 150 ms: the rare one keeps a place, and waits about as little as the busy one',
    maxTotal: 6,
    connect: { mean: 150, spread: 0.2 },
    disconnect: { mean: 5, spread: 0.2 },
    streams: [stream('busy', 0, 30_000, 150, 20), stream('rare', 0, 30_000, 2, 20)],
    measures: [
      // One connect is 150 ms: a rare member that loses its place pays one on most of its calls;
      // after a gap far longer than its usual ones (one in 20), one connect at most.
      wait(90, ['rare'], 5, 150, 3),
      wait(99, ['rare'], 200, 600, 1),
      wait(99, ['busy'], 20, 300, 2),
      overhead(7, 200, 1),
    ],
    threshold: 85,
  },
  {
    name: 'members arriving and leaving',
    about: 'four members come and go over 14 s on a budget of 6; the last one ends alone with what it needs',
    maxTotal: 6,
    connect: { mean: 30, spread: 0.2 },
    disconnect: { mean: 5, spread: 0.2 },
    streams: [
      stream('a', 0, 8_000, 80, 20),
      stream('b', 2_000, 10_000, 80, 20),
      stream('c', 4_000, 12_000, 80, 20),
      stream('d', 10_000, 14_000, 160, 20),
    ],
    measures: [
      alike(['a', 'b', 'c', 'd'], 2),
      wait(90, ['a', 'b', 'c', 'd'], 30, 300, 2),
      overhead(12, 600, 1),
      {
        kind: 'capacity',
        members: ['d'],
        at: 13_900,
        weight: 1,
        label: 'share of maxTotal held by d once alone',
        landmarks: [
          [0.3, 0],
          [0.6, 100],
        ],
      },
    ],
    threshold: 65,
  },
  {
    name: 'costly connects',
    about: 'six members on a budget of 4 with 500 ms connects: share without thrashing',
    maxTotal: 4,
    connect: { mean: 500, spread: 0.2 },
    disconnect: { mean: 20, spread: 0.2 },
    streams: names('m', 6).map((m) => stream(m, 0, 15_000, 15, 20)),
    measures: [alike(names('m', 6), 2), wait(90, names('m', 6), 500, 5_000, 2), overhead(8, 300, 2)],
    threshold: 75,
  },
  {
    name: 'cheap connects',
    about: 'six members on a budget of 4 with 2 ms connects: move places freely, waits stay short',
    maxTotal: 4,
    connect: { mean: 2, spread: 0.2 },
    disconnect: { mean: 1, spread: 0.2 },
    streams: names('m', 6).map((m) => stream(m, 0, 10_000, 15, 20)),
    measures: [alike(names('m', 6), 2), wait(90, names('m', 6), 5, 200, 3), overhead(8, 1_800, 1)],
    threshold: 75,
  },
  {
    name: 'many more members than places',
    about: 'forty members on a budget of 8: everyone served',
    maxTotal: 8,
    connect: { mean: 20, spread: 0.2 },
    disconnect: { mean: 5, spread: 0.2 },
    streams: names('t', 40).map((m) => stream(m, 0, 10_000, 4, 20)),
    measures: [
      wait(50, names('t', 40), 20, 200, 2),
      wait(90, names('t', 40), 20, 1_000, 2),
      alike(names('t', 40), 1),
      overhead(16, 3_300, 1),
    ],
    threshold: 60,
  },
];
