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

const PLAIN_BEGIN = /^(?:begin(?: work| transaction)?|start transaction)$/;
const PLAIN_COMMIT = /^(?:commit|end)(?: work| transaction)?(?: and no chain)?$/;
const PLAIN_ROLLBACK = /^(?:rollback|abort)(?: work| transaction)?(?: and no chain)?$/;
const TO_SAVEPOINT = /^rollback(?: work| transaction)? to /;
/** The first word of a statement that begins or ends a transaction (or prepares one, with `transaction` after it). */
const CONTROL_WORD = /^[^a-z]*(?:begin|start|commit|end|rollback|abort|prepare transaction)\b/;

/** What `text` does to the transaction (see {@link TransactionControl}). */
export function transactionControl(text: string): TransactionControl {
  const statements = statementsOf(text)
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

/**
 * The statements of a text, split at the semicolons PostgreSQL splits at: none inside a string
 * literal, a quoted identifier, a dollar-quoted body or a comment (block comments nest, as
 * PostgreSQL's do). Those are left out, each as a space.
 */
function statementsOf(text: string): string[] {
  const statements: string[] = [];
  let current = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === ';') {
      statements.push(current);
      current = '';
      i++;
    } else if (c === '-' && next === '-') {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end + 1;
      current += ' ';
    } else if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < text.length && depth > 0) {
        const pair = text.slice(i, i + 2);
        depth += pair === '/*' ? 1 : pair === '*/' ? -1 : 0;
        i += pair === '/*' || pair === '*/' ? 2 : 1;
      }
      current += ' ';
    } else if (c === "'" || c === '"') {
      // A doubled quote inside is the quote itself: the literal goes on.
      let j = i + 1;
      for (; j < text.length; j++) if (text[j] === c && text[++j] !== c) break;
      i = j;
      current += ' ';
    } else if (c === '$' && /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.test(text.slice(i, i + 64))) {
      const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i, i + 64))![0];
      const end = text.indexOf(tag, i + tag.length);
      i = end < 0 ? text.length : end + tag.length;
      current += ' ';
    } else {
      current += c;
      i++;
    }
  }
  statements.push(current);
  return statements;
}
