// What a PostgreSQL session says of itself on the wire, beyond its transaction status: each
// statement's command tag (SET, RESET, PREPARE, LISTEN, DECLARE CURSOR, CREATE TABLE…) and the
// ParameterStatus messages the server sends when a reported setting changes (the session's
// authorization, superuser status, DateStyle, TimeZone, client encoding…). The connector reads
// them as pg receives them, so a session its caller left alone costs no round trip.
import type { EventEmitter } from 'node:events';
import type pg from 'pg';

/** Command tags of statements that change the session beyond its transaction. */
const SESSION_TAGS = new Set([
  'SET',
  'RESET',
  'PREPARE',
  'DEALLOCATE',
  'DEALLOCATE ALL',
  'LISTEN',
  'DECLARE CURSOR',
  'CREATE TABLE',
  'CREATE VIEW', // a TEMP one lives as long as the session
  'CREATE SEQUENCE',
  'LOAD',
  'DISCARD ALL',
  'DISCARD TEMP',
  'DISCARD PLANS',
  'DISCARD SEQUENCES',
  'CREATE FUNCTION',
]);

/**
 * Changes that no tag and no ParameterStatus report (a function's effects on the session, a
 * temporary table made by CREATE … AS): read from the statement's text, erring toward a change.
 */
const UNREPORTED =
  /\bpg_(?:try_)?advisory_lock|\b(?:create(?:\s+or\s+replace)?|into)\s+(?:(?:global|local)\s+)?temp(?:orary)?\b/i;
/** `set_config(…)` calls, the name quoted or not: a change of the session unless the call is plainly for its transaction only. */
const SET_CONFIG = /\bset_config"?\s*\(([^()]*)\)/gi;
/** Comments, which may stand between a function's name and its arguments. */
const COMMENTS = /\/\*[\s\S]*?\*\/|--[^\n]*/g;
/** A statement that is one `SET LOCAL`: its tag is SET, and it ends with its transaction. */
const SET_LOCAL = /^\s*SET\s+LOCAL\b[^;]*;?\s*$/i;

/** One test that most statements fail: only those that pass it are read further. */
const MAYBE_UNREPORTED = /set_config|advisory|temp/i;

/** Whether a statement's text may change the session where the server does not say so. */
function unreported(text: string): boolean {
  if (!MAYBE_UNREPORTED.test(text)) return false;
  if (text.includes('/*') || text.includes('--')) text = text.replace(COMMENTS, ' ');
  if (UNREPORTED.test(text)) return true;
  for (const [, args] of text.matchAll(SET_CONFIG)) if (!/,\s*true\s*$/i.test(args!)) return true;
  return false;
}

/** What the server reported of one client's session. */
export interface PgSession {
  /** The session changed beyond its transaction since it began, or since its last session reset. */
  changed: boolean;
  /** The tag of the last statement that completed: "DISCARD ALL", "SELECT 1". */
  lastTag: string;
  /** Session resets so far: what was set up on the session before the last one is gone. */
  resets: number;
}

const sessions = new WeakMap<pg.Client, PgSession>();

/** What the server reported of `client`'s session; undefined for a client not followed. */
export function sessionOf(client: pg.Client): PgSession | undefined {
  return sessions.get(client);
}

/** Follows what the server reports of `client`, from now on (after its connect: the startup's own reports are its beginning). */
export function followSession(client: pg.Client): PgSession {
  const session: PgSession = { changed: false, lastTag: '', resets: 0 };
  sessions.set(client, session);
  const connection = (client as unknown as { connection?: EventEmitter }).connection;
  /** The text of the statement the server is answering: pg's active query (`_activeQuery`; the public getter is deprecated and warns). */
  const held = client as unknown as Record<string, { text?: unknown } | null | undefined>;
  const field = '_activeQuery' in held ? '_activeQuery' : 'activeQuery';
  const text = (): string => {
    const active = held[field];
    return typeof active?.text === 'string' ? active.text : '';
  };
  connection?.on('commandComplete', (message: { text?: string }) => {
    const tag = message.text ?? '';
    session.lastTag = tag;
    if (session.changed) return;
    if (SESSION_TAGS.has(tag) && !(tag === 'SET' && SET_LOCAL.test(text()))) session.changed = true;
    else if (unreported(text())) session.changed = true;
  });
  // A statement that failed may have changed the session before it did (an advisory lock).
  connection?.on('errorMessage', () => {
    if (!session.changed && unreported(text())) session.changed = true;
  });
  connection?.on('parameterStatus', () => void (session.changed = true));
  return session;
}
