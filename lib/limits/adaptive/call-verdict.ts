import type { CallResult } from '../../core/index.js';

/** What a call's end says about the backend's capacity. */
export type CallVerdict =
  /** It answered: the limit may grow. */
  | 'success'
  /** It is at capacity (429, 503, a timeout): the limit is cut. `retryAfterMs`: admit nothing for that long. */
  | { readonly overload: true; readonly retryAfterMs?: number }
  /** An error that says nothing about capacity (a 404, a bad request, a bug): not counted. */
  | 'ignore';

/**
 * The default verdict on a call's end: an HTTP answer with status 429 or 503 (a value or an error
 * with `status` or `statusCode`, like the built-in HTTP/2 connector's `http2Request` answer),
 * the pool's own `CapacityExceededError`, or a timeout (`TimeoutError`, `ETIMEDOUT`, an abort for
 * a timeout) is overload, with the `Retry-After` header if there is one; any other answer is a
 * success; any other error says nothing about capacity.
 */
export function classifyCall(result: CallResult): CallVerdict {
  const subject = result.ok ? result.value : result.error;
  const status = statusOf(subject);
  if (status === 429 || status === 503) {
    const retryAfterMs = retryAfterOf(subject);
    return retryAfterMs === undefined ? { overload: true } : { overload: true, retryAfterMs };
  }
  if (result.ok) return 'success';
  const err = result.error as { name?: unknown; code?: unknown; cause?: unknown } | null;
  if (typeof err !== 'object' || err === null) return 'ignore';
  if (
    err.code === 'CAPACITY_EXCEEDED' ||
    err.code === 'ETIMEDOUT' ||
    err.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    err.name === 'TimeoutError'
  )
    return { overload: true };
  if (err.name === 'AbortError' && (err.cause as { name?: unknown } | undefined)?.name === 'TimeoutError')
    return { overload: true };
  return 'ignore';
}

/** Whether a classifier's verdict is overload (a classifier may return anything: only this shape counts). */
export function isOverload(verdict: unknown): boolean {
  return typeof verdict === 'object' && verdict !== null && (verdict as { overload?: unknown }).overload === true;
}

function statusOf(subject: unknown): number | undefined {
  if (typeof subject !== 'object' || subject === null) return undefined;
  const s = subject as { status?: unknown; statusCode?: unknown };
  const status = s.status ?? s.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** A `Retry-After` header of `subject` (seconds, or an HTTP date), ms; undefined when there is none. */
function retryAfterOf(subject: unknown): number | undefined {
  const headers = (subject as { headers?: unknown }).headers;
  let value: unknown;
  if (headers instanceof Map || (typeof Headers !== 'undefined' && headers instanceof Headers))
    value = (headers as Map<string, unknown>).get('retry-after');
  else if (typeof headers === 'object' && headers !== null) value = (headers as Record<string, unknown>)['retry-after'];
  if (Array.isArray(value)) value = value[0];
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.min(seconds, 3_600) * 1_000 : undefined;
  const date = Date.parse(String(value));
  return Number.isNaN(date) ? undefined : Math.min(Math.max(0, date - Date.now()), 3_600_000);
}
