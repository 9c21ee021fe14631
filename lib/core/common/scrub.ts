// What leaves the process of an error or a setting (the dashboard, /health, the HTTP error
// filter, the logs, stats()) goes through `scrub`: drivers put the URL, the connection string or
// the options they failed on into their messages, with the password in them. It errs on the side
// of hiding: a value under any key that names a credential goes, whatever the key's spelling.

const HIDDEN = '***';

/** Words that make a key a credential's: `password`, `PGPASSWORD`, `sslpassword`, `x-api-key`, `AccountKey`, `client_secret`, `Authorization`, ... */
const CREDENTIAL_WORDS =
  'passw(?:or)?d|passphrase|pwd|secret|token|api[-_]?key|access[-_]?key|account[-_]?key|private[-_]?key|shared[-_]?access[-_]?(?:key|signature)|credential|authorization|cookie';
const W = 'A-Za-z0-9_-';
/**
 * A key naming a credential, as a whole word. The lookahead finds the word in the key; the
 * second takes the key whole with no way back into it (an atomic group), so that a long word
 * costs its length once, not its square.
 */
const KEY = `(?<![${W}])(?=[${W}]*?(?:${CREDENTIAL_WORDS})|(?:sig|auth)(?![${W}]))(?=(?<word>[${W}]+))\\k<word>`;
/** A value: quoted (JSON, Node's inspect, libpq, JSON inside a JSON string), or bare up to a separator (an auth scheme's word and its token both). */
const VALUE = [
  String.raw`\\(?<q>["'])(?:(?!(?<!\\)\\\k<q>).)*(?:\\\k<q>)?`,
  String.raw`"(?:[^"\\]|\\.)*"?`,
  String.raw`'(?:[^'\\]|\\.)*'?`,
  '`[^`]*`?',
  String.raw`(?:(?:Bearer|Basic|Digest|Negotiate|Token)\s+)?[^\s,;&}\]]+`,
].join('|');
/** A credential key, quoted or not, its separator, its value. */
const KEYED = new RegExp(
  String.raw`(?<open>\\?["'${'`'}]|)(?<key>${KEY})(?<close>\\?["'${'`'}]|)(?<separator>\s*(?:=>|[:=])\s*)(?<value>${VALUE})`,
  'gi',
);
const SCHEME_WORD = /^(?:Bearer|Basic|Digest|Negotiate|Token)\s+/i;
/** `scheme://` and the rest of the address, taken whole (an atomic group: no way back into it). */
const ADDRESS = /(?<![a-z0-9+.-])(?=(?<scheme>[a-z][a-z0-9+.-]*:\/\/))\k<scheme>(?=(?<rest>[^\s'"`<>]*))\k<rest>/gi;
const AUTH_SCHEME = /\b(Bearer|Basic|Digest|Negotiate)\s+[^\s,;'"`)}\]]+/g;
/** ioredis prints the command it failed on: `{ name: 'auth', args: [ 'user', 'password' ] }`. */
const AUTH_COMMAND =
  /(name['"]?\s*:\s*['"](?:auth|hello|migrate)['"]\s*,\s*['"]?args['"]?\s*:\s*)\[(?:'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|`[^`]*`?|[^\]'"`])*\]?/gi;

interface Keyed {
  open: string;
  key: string;
  close: string;
  separator: string;
  value: string;
}

/**
 * `text` with the credentials it may carry replaced by `***`: passwords in URLs (`@`, `/` and `:`
 * in them included), values of credential keys in connection strings, environment lines,
 * headers, JSON and objects as Node prints them (`password=`, `PGPASSWORD=`, `sslpassword=`,
 * `{ password: '…' }`, `"apiKey": "…"`, `x-api-key: …`, Azure's `AccountKey=` and `sig=`),
 * Authorization schemes with their token, and Redis AUTH arguments.
 */
export function scrub(text: string): string {
  return text
    .replace(AUTH_COMMAND, `$1[${HIDDEN}]`)
    .replace(KEYED, (...match: unknown[]) => {
      const { open, key, close, separator, value } = match.at(-1) as Keyed;
      return `${open}${key}${close}${separator}${hiddenValue(value)}`;
    })
    .replace(AUTH_SCHEME, `$1 ${HIDDEN}`)
    .replace(ADDRESS, (address: string, scheme: string, rest: string) => {
      // user:password@ runs to the last @ of the address: a password may hold @, / and :.
      const at = rest.lastIndexOf('@');
      if (at < 0) return address;
      const user = /^[^:/@]*/.exec(rest)![0];
      return `${scheme}${rest.charAt(user.length) === ':' ? `${user}:` : ''}${HIDDEN}${rest.slice(at)}`;
    });
}

/** A credential's value hidden, its quotes and its auth scheme (`Bearer`) kept. */
function hiddenValue(value: string): string {
  const quote = /^\\?["'`]/.exec(value)?.[0];
  if (quote !== undefined)
    return `${quote}${HIDDEN}${value.length > quote.length && value.endsWith(quote) ? quote : ''}`;
  const scheme = SCHEME_WORD.exec(value)?.[0] ?? '';
  return `${scheme}${HIDDEN}`;
}

/** `text` scrubbed, or null when there is none. */
export function scrubbed(text: string | undefined | null): string | null {
  return text === undefined || text === null ? null : scrub(text);
}

/**
 * A copy of an error fit to log: its message and stack scrubbed, its name and code kept, its
 * cause scrubbed the same way. A value that is not an Error becomes scrubbed text.
 */
export function scrubbedCause(cause: unknown, depth = 0): unknown {
  if (cause === undefined || cause === null) return cause;
  if (!(cause instanceof Error)) return scrub(typeof cause === 'string' ? cause : safeString(cause));
  const copy = new Error(scrub(cause.message));
  copy.name = cause.name;
  copy.stack = cause.stack === undefined ? undefined : scrub(cause.stack);
  const code = (cause as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') (copy as { code?: unknown }).code = code;
  if (cause.cause !== undefined && depth < 4) copy.cause = scrubbedCause(cause.cause, depth + 1);
  return copy;
}

function safeString(value: unknown): string {
  try {
    return typeof value === 'object' ? (JSON.stringify(value) ?? String(value)) : String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** An error's message, or the thrown value as text, with the credentials it may carry hidden (see `scrub`). */
export function messageOf(err: unknown): string {
  return scrub(err instanceof Error ? err.message : String(err));
}
