/**
 * What a statement does to the transaction, read from its text only where the pool must act
 * before the server sees it: a unit of work inside a scope's transaction runs its own
 * transactions as savepoints. Whether a transaction is open is never read from text: the
 * server reports it with every reply (`client.getTransactionStatus()`).
 *
 * - `begin`, `commit`, `rollback`: the plain forms, which nest as SAVEPOINT, RELEASE SAVEPOINT and
 *   ROLLBACK TO SAVEPOINT;
 * - `refused`: a form that cannot nest (`BEGIN ISOLATION LEVEL …`, `COMMIT AND CHAIN`,
 *   `PREPARE TRANSACTION`, several statements in one text with a transaction statement among
 *   them): refused inside a transaction rather than let end it;
 * - undefined: anything else, savepoint statements included, which run as sent.
 */
export type TransactionControl = 'begin' | 'commit' | 'rollback' | 'refused' | undefined;

/** String literals, quoted identifiers, dollar-quoted bodies and comments: none of them is a statement. */
const NOT_STATEMENTS =
  /'(?:[^']|'')*'|"(?:[^"]|"")*"|\$([A-Za-z_][A-Za-z0-9_]*)?\$[\s\S]*?\$\1\$|--[^\n]*|\/\*[\s\S]*?\*\//g;
const PLAIN_BEGIN = /^(?:begin(?: work| transaction)?|start transaction)$/;
const PLAIN_COMMIT = /^(?:commit|end)(?: work| transaction)?$/;
const PLAIN_ROLLBACK = /^(?:rollback|abort)(?: work| transaction)?$/;
const TO_SAVEPOINT = /^rollback(?: work| transaction)? to /;
/** The first word of a statement that begins or ends a transaction (or prepares one, with `transaction` after it). */
const CONTROL_WORD = /^[^a-z]*(?:begin|start|commit|end|rollback|abort|prepare transaction)\b/;

/** What `text` does to the transaction (see {@link TransactionControl}). */
export function transactionControl(text: string): TransactionControl {
  const statements = text
    .replace(NOT_STATEMENTS, ' ')
    .split(';')
    .map((s) => s.trim().replace(/\s+/g, ' ').toLowerCase())
    .filter((s) => s !== '');
  if (statements.length === 0) return undefined;
  if (statements.length > 1) return statements.some((s) => CONTROL_WORD.test(s)) ? 'refused' : undefined;
  const statement = statements[0]!;
  if (!CONTROL_WORD.test(statement)) return undefined;
  if (PLAIN_BEGIN.test(statement)) return 'begin';
  if (PLAIN_COMMIT.test(statement)) return 'commit';
  if (PLAIN_ROLLBACK.test(statement)) return 'rollback';
  if (TO_SAVEPOINT.test(statement)) return undefined;
  return 'refused';
}
