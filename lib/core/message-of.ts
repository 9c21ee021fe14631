import { scrub } from './scrub.js';

/** An error's message, or the thrown value as text, with the credentials it may carry hidden (see `scrub`). */
export function messageOf(err: unknown): string {
  return scrub(err instanceof Error ? err.message : String(err));
}
