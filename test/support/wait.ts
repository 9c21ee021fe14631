/** Real-time waiting for tests that run against real services or timers. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `what` (which may ask a server) every 10 ms until it holds; throws after `ms`. */
export async function until(what: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(10);
  }
}
