import type { SelectionStrategy } from '../options/index.js';
import type { SharedConnection } from './shared-connection.js';

/**
 * Ready connections that have room, bucketed by client count. Each bucket is a list with the
 * most recently used connection at its head, and a bitmap marks the non-empty buckets, so a
 * pick costs O(clientLimit / 32) word reads: constant in the number of connections.
 */
export class ConnectionIndex<T> {
  readonly #heads: (SharedConnection<T> | null)[];
  readonly #bits: Uint32Array;
  readonly #pack: boolean;
  #size = 0;

  constructor(clientLimit: number, strategy: SelectionStrategy) {
    this.#heads = new Array<SharedConnection<T> | null>(clientLimit).fill(null);
    this.#bits = new Uint32Array(Math.ceil(clientLimit / 32));
    this.#pack = strategy === 'pack';
  }

  /** Connections in the index. */
  get size(): number {
    return this.#size;
  }

  /** The best connection with room: fewest clients (`spread`) or most (`pack`); MRU breaks ties. */
  pick(): SharedConnection<T> | null {
    const bits = this.#bits;
    if (this.#pack) {
      for (let w = bits.length - 1; w >= 0; w--) {
        const word = bits[w]!;
        if (word !== 0) return this.#heads[w * 32 + 31 - Math.clz32(word)]!;
      }
    } else {
      for (let w = 0; w < bits.length; w++) {
        const word = bits[w]!;
        if (word !== 0) return this.#heads[w * 32 + 31 - Math.clz32(word & -word)]!;
      }
    }
    return null;
  }

  /** Files `conn` under its client count, as most recently used; a full connection is left out. */
  add(conn: SharedConnection<T>): void {
    const b = conn.clients;
    if (b >= conn.limit) return;
    const head = this.#heads[b]!;
    conn.bucket = b;
    conn.prev = null;
    conn.next = head;
    if (head === null) this.#bits[b >>> 5]! |= 1 << (b & 31);
    else head.prev = conn;
    this.#heads[b] = conn;
    this.#size++;
  }

  /** Takes `conn` out of the index; a no-op if it is not in it. */
  remove(conn: SharedConnection<T>): void {
    const b = conn.bucket;
    if (b < 0) return;
    const { prev, next } = conn;
    if (prev === null) {
      this.#heads[b] = next;
      if (next === null) this.#bits[b >>> 5]! &= ~(1 << (b & 31));
    } else prev.next = next;
    if (next !== null) next.prev = prev;
    conn.bucket = -1;
    conn.prev = conn.next = null;
    this.#size--;
  }

  /** Refiles `conn` after its client count or limit changed. */
  update(conn: SharedConnection<T>): void {
    this.remove(conn);
    this.add(conn);
  }
}
