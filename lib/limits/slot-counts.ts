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
}
