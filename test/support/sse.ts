import { request, type IncomingMessage } from 'node:http';

/** A client of a server-sent event stream that keeps every event it got. */
export interface SseClient {
  readonly status: number;
  readonly events: { event: string; data: string }[];
  /** Bytes received, events or not. */
  readonly bytes: () => number;
  /** Resolves once `n` events have come (rejects after `ms`). */
  next(n: number, ms?: number): Promise<void>;
  /** Resolves when the server ended the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/** Opens `url` as an event stream (any status: a refused one has no events). */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream', ...headers } }, (res: IncomingMessage) => {
      const events: { event: string; data: string }[] = [];
      let buffer = '';
      let bytes = 0;
      const waiters: { n: number; done: () => void }[] = [];
      const ended = new Promise<void>((done) => {
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        bytes += Buffer.byteLength(chunk);
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) events.push({ event, data: data.join('\n') });
        }
        for (const w of [...waiters]) if (events.length >= w.n) w.done();
      });
      resolve({
        status: res.statusCode!,
        events,
        bytes: () => bytes,
        ended,
        next: (n, ms = 5_000) =>
          new Promise<void>((done, fail) => {
            if (events.length >= n) return done();
            const timer = setTimeout(() => fail(new Error(`only ${events.length} of ${n} events in ${ms} ms`)), ms);
            waiters.push({ n, done: () => (clearTimeout(timer), done()) });
          }),
        close: () => {
          req.destroy();
          res.destroy();
        },
      });
    });
    req.on('error', reject);
    req.end();
  });
}
