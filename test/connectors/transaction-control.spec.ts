// Which statements begin or end a transaction, read from their text only where a unit of work
// inside a scope must nest them; everything else runs as sent.
import { describe, expect, it } from '@jest/globals';
import { transactionControl } from '../../lib/connectors/pg/transaction-control.js';

describe('transactionControl', () => {
  it.each([
    ['BEGIN', 'begin'],
    ['begin;', 'begin'],
    ['  Begin Work ', 'begin'],
    ['BEGIN TRANSACTION', 'begin'],
    ['START TRANSACTION', 'begin'],
    ['/* kysely */ begin', 'begin'],
    ['-- a comment\nBEGIN', 'begin'],
    ['COMMIT', 'commit'],
    ['END', 'commit'],
    ['commit transaction;', 'commit'],
    ['COMMIT AND NO CHAIN', 'commit'],
    ['rollback and no chain', 'rollback'],
    ['/* a /* nested */ comment */ BEGIN', 'begin'],
    ['ROLLBACK', 'rollback'],
    ['abort work', 'rollback'],
  ])('%j is %s', (text, kind) => expect(transactionControl(text)).toBe(kind));

  it.each([
    'BEGIN ISOLATION LEVEL SERIALIZABLE',
    'START TRANSACTION READ ONLY',
    'COMMIT AND CHAIN',
    'ROLLBACK AND CHAIN',
    "PREPARE TRANSACTION 'x'",
    "COMMIT PREPARED 'x'",
    'SELECT 1; COMMIT',
    'select 1; /* x */ rollback',
    'INSERT INTO t VALUES (1);\nBEGIN',
    "SELECT 'it''s'; COMMIT",
  ])('%j cannot nest: refused', (text) => expect(transactionControl(text)).toBe('refused'));

  it.each([
    'SELECT 1',
    'SAVEPOINT a',
    'RELEASE SAVEPOINT a',
    'ROLLBACK TO SAVEPOINT a',
    'rollback to a',
    "SELECT 'BEGIN; COMMIT'",
    "SELECT 'it''s; COMMIT'",
    '/* a /* b */ ; COMMIT */ SELECT 1',
    'SELECT 1 -- ; COMMIT',
    'SELECT "end" FROM t',
    'CREATE FUNCTION f() RETURNS void AS $$ BEGIN PERFORM 1; END; $$ LANGUAGE plpgsql',
    'CREATE FUNCTION g() RETURNS void AS $body$ BEGIN RETURN; END $body$ LANGUAGE plpgsql',
    'PREPARE q AS SELECT 1',
    'SELECT 1; SELECT 2',
    'UPDATE t SET a = CASE WHEN b THEN 1 ELSE 2 END',
    '',
    ';',
  ])('%j runs as sent', (text) => expect(transactionControl(text)).toBeUndefined());
});
