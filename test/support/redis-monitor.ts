// Every command Redis receives from one client, read through MONITOR on a socket of its own.
// ioredis's own monitor() marks its connection as monitoring only once MONITOR's +OK has been
// handled, so a command line that arrives in the same read (a busy server, another spec running)
// fails its command queue: this reads the lines itself.
import { connect, type Socket } from 'node:net';

export interface RedisMonitor {
  /** Commands seen from the watched client, lower-cased, arguments joined by spaces. */
  readonly seen: string[];
  stop(): void;
}

/** The quoted arguments of a MONITOR line (`+1.2 [0 127.0.0.1:5] "get" "k"`), unescaped. */
function argumentsOf(line: string): string[] {
  const args: string[] = [];
  const quoted = /"((?:[^"\\]|\\.)*)"/g;
  for (let match = quoted.exec(line); match !== null; match = quoted.exec(line))
    args.push(
      match[1].replace(/\\x([0-9a-f]{2})|\\(.)/gi, (_all, hex: string, char: string) =>
        hex !== undefined ? String.fromCharCode(parseInt(hex, 16)) : char,
      ),
    );
  return args;
}

/**
 * Starts watching the commands sent from the local port `port()` gives (read per line, so it may
 * name a client made later); resolves once the server is monitoring.
 */
export function monitorRedis(port: () => number, host = '127.0.0.1', serverPort = 6379): Promise<RedisMonitor> {
  const seen: string[] = [];
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(serverPort, host, () => socket.write('MONITOR\r\n'));
    let buffered = '';
    let ready = false;
    socket.setEncoding('latin1');
    socket.once('error', reject);
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let end = buffered.indexOf('\r\n');
      while (end !== -1) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        end = buffered.indexOf('\r\n');
        if (!ready) {
          if (line !== '+OK') return reject(new Error(`MONITOR answered ${line}`));
          ready = true;
          resolve({ seen, stop: () => void socket.destroy() });
          continue;
        }
        const source = /\[\d+ [^\]]*:(\d+)\]/.exec(line);
        if (source !== null && Number(source[1]) === port()) seen.push(argumentsOf(line).join(' ').toLowerCase());
      }
    });
  });
}
