/** How many keys a limiter's stats() names in `topKeys`. */
export const TOP_KEYS = 5;

/** Which limit refused a slot, if any. */
export type Refusal = 'global' | 'key' | null;

/** Leases held in this process: a total and a count per key. */
export class SlotCounts {
  used = 0;
  readonly #perKey = new Map<string, number>();

  /** Takes a slot when both limits allow it; says which one refused otherwise. */
  take(key: string | undefined, global: number, perKey: number): Refusal {
    if (this.used >= global) return 'global';
    if (key !== undefined) {
      const held = this.#perKey.get(key) ?? 0;
      if (held >= perKey) return 'key';
      this.#perKey.set(key, held + 1);
    }
    this.used++;
    return null;
  }

  give(key: string | undefined): void {
    this.used--;
    if (key === undefined) return;
    const held = this.#perKey.get(key)! - 1;
    if (held === 0) this.#perKey.delete(key);
    else this.#perKey.set(key, held);
  }

  /** Keys holding at least one slot. */
  get keys(): number {
    return this.#perKey.size;
  }

  /** The `n` keys holding the most slots, most first (ties by key). */
  top(n: number): { key: string; leases: number }[] {
    const top: { key: string; leases: number }[] = [];
    for (const [key, leases] of this.#perKey) {
      if (top.length === n && leases <= top[n - 1]!.leases) continue;
      top.push({ key, leases });
      top.sort((a, b) => b.leases - a.leases || (a.key < b.key ? -1 : 1));
      if (top.length > n) top.pop();
    }
    return top;
  }
}
