// A gate for calls a test holds open: each open() ends the calls awaiting `promise` now, and the
// calls that await it afterwards wait for the next open().
export class Gate {
  #open!: () => void;
  promise = this.#reset();
  #reset(): Promise<void> {
    return (this.promise = new Promise<void>((resolve) => (this.#open = resolve)));
  }
  open(): void {
    this.#open();
    this.#reset();
  }
}
