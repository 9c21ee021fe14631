// Configurations the ready-made connectors cannot connect with, refused when the connector is
// made, with what to change: before, some were accepted and failed at the first create, and two
// (a pg.Pool given to pgConnector, an ioredis connectTimeout of -1) crashed the process there.
import { describe, expect, it } from '@jest/globals';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { ConnectionPool, PoolConfigError } from '../../lib/index.js';
import { amqpConnector } from '../../lib/connectors/amqp/index.js';
import { redisConnector, sharedRedisConnector } from '../../lib/connectors/ioredis/index.js';
import { mysql2Connector } from '../../lib/connectors/mysql2/index.js';
import { asPgPool, pgConnector } from '../../lib/connectors/pg/index.js';

type Make = () => unknown;

function refused(make: Make, message: RegExp): void {
  let thrown: unknown;
  try {
    make();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(PoolConfigError);
  expect((thrown as Error).message).toMatch(message);
}

describe('a connector refuses, when it is made, what it could not connect with', () => {
  const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
  const client = new pg.Client('postgres://postgres@127.0.0.1:5432/test');
  const redis = new Redis({ lazyConnect: true });
  const mysqlPool = mysql.createPool({ host: '127.0.0.1' });

  it.each<[string, Make, RegExp]>([
    ["pgConnector('')", () => pgConnector(''), /"client" \(the first argument\) is empty: give a connection string/],
    ["pgConnector('not a url')", () => pgConnector('not a url'), /got "not a url", which is not a URL/],
    [
      "pgConnector('mysql://…')",
      () => pgConnector('mysql://root@127.0.0.1/test'),
      /a URL of postgres: or postgresql:.*got one of mysql:/,
    ],
    [
      'pgConnector(new pg.Pool())',
      () => pgConnector(pool as never),
      /is a live pg\.Pool.*pgConnector\(pool\.options\)/,
    ],
    ['pgConnector(new pg.Client())', () => pgConnector(client as never), /is a live pg client/],
    ['pgConnector({ port: NaN })', () => pgConnector({ port: Number.NaN }), /"client\.port" must be a port/],
    ['pgConnector({ port: 70000 })', () => pgConnector({ port: 70_000 }), /"client\.port" must be a port/],
    [
      'pgConnector({ connectionTimeoutMillis: -1 })',
      () => pgConnector({ connectionTimeoutMillis: -1 }),
      /"client\.connectionTimeoutMillis" must be a finite number at least 0, got -1/,
    ],
    [
      'pgConnector({ statement_timeout: Infinity })',
      () => pgConnector({ statement_timeout: Infinity }),
      /"client\.statement_timeout" must be a finite number/,
    ],
    ["mysql2Connector('')", () => mysql2Connector(''), /is empty/],
    ["mysql2Connector('http://…')", () => mysql2Connector('http://127.0.0.1:3306/test'), /got one of http:/],
    ['mysql2Connector(a mysql2 pool)', () => mysql2Connector(mysqlPool as never), /is a live mysql2 pool/],
    [
      'mysql2Connector({ connectTimeout: NaN })',
      () => mysql2Connector({ connectTimeout: Number.NaN }),
      /"config\.connectTimeout" must be a finite number/,
    ],
    ["redisConnector('')", () => redisConnector(''), /is empty/],
    ["redisConnector('http://…')", () => redisConnector('http://127.0.0.1:6379'), /a URL of redis: or rediss:/],
    [
      'redisConnector(url, { db: 3 })',
      () => (redisConnector as (...a: unknown[]) => unknown)('redis://127.0.0.1:6379', { db: 3 }),
      /takes one argument.*redis:\/\/host:6379\/3/,
    ],
    [
      'redisConnector({ connectTimeout: -1 })',
      () => redisConnector({ connectTimeout: -1 }),
      /"config\.connectTimeout" must be a finite number at least 0/,
    ],
    ['sharedRedisConnector(new Redis())', () => sharedRedisConnector(redis as never), /is a live ioredis client/],
    ['sharedRedisConnector({ port: 0 })', () => sharedRedisConnector({ port: 0 }), /"config\.port" must be a port/],
    ["amqpConnector('')", () => amqpConnector(''), /is empty/],
    [
      "amqpConnector('http://…')",
      () => amqpConnector('http://guest:guest@127.0.0.1:15672'),
      /a URL of amqp: or amqps:/,
    ],
    ["amqpConnector('amqp://…:0')", () => amqpConnector('amqp://127.0.0.1:0'), /names port 0/],
    [
      'amqpConnector({ heartbeat: -5 })',
      () => amqpConnector({ heartbeat: -5 }),
      /"url\.heartbeat" must be a finite number/,
    ],
    // Found from outside: each of these crashed the process at the first create, or failed only there.
    [
      "redisConnector('redis://…/abc')",
      () => redisConnector('redis://127.0.0.1:6379/abc'),
      /names the database "abc": Redis takes a database index there/,
    ],
    [
      'redisConnector({ db: NaN })',
      () => redisConnector({ db: Number.NaN }),
      /"config\.db" must be a whole number at least 0/,
    ],
    [
      "redisConnector('redis://…?connectTimeout=-1')",
      () => redisConnector('redis://127.0.0.1:6379/?connectTimeout=-1'),
      /"config \(its query\)\.connectTimeout" must be a finite number at least 0, got -1/,
    ],
    [
      'mysql2Connector({ maxPreparedStatements: -1 })',
      () => mysql2Connector({ host: '127.0.0.1', maxPreparedStatements: -1 }),
      /"config\.maxPreparedStatements" must be a whole number at least 1/,
    ],
    [
      "mysql2Connector({ uri: 'mysql://…:0' })",
      () => mysql2Connector({ uri: 'mysql://root@127.0.0.1:0/test' }),
      /"config\.uri" names port 0/,
    ],
    [
      "pgConnector({ connectionString: 'http://…' })",
      () => pgConnector({ connectionString: 'http://127.0.0.1:5432/test' }),
      /"client\.connectionString".*got one of http:/,
    ],
    [
      "pgConnector({ connectionString: 'postgres://…:0' })",
      () => pgConnector({ connectionString: 'postgres://postgres@127.0.0.1:0/test' }),
      /names port 0/,
    ],
  ])('%s', (_, make, message) => refused(make, message));

  it('asPgPool() refuses a pool of another driver, naming it', async () => {
    const mysqlPool = new ConnectionPool(mysql2Connector('mysql://root@127.0.0.1:3306/test'), { name: 'mysql' });
    refused(
      () => asPgPool(mysqlPool as never),
      /is a pool of mysql2 connections: asPgPool\(\) takes a pool of pg clients/,
    );
    await mysqlPool.close();
  });

  it('what the drivers take is still taken: URLs, key=value pairs, socket paths, options', () => {
    for (const make of [
      () => pgConnector('postgresql://postgres@127.0.0.1:5432/test'),
      () => pgConnector('host=127.0.0.1 port=5432 dbname=test user=postgres'),
      () => pgConnector('/var/run/postgresql'),
      () => pgConnector({ host: '127.0.0.1', port: 5432, statement_timeout: false as unknown as number }),
      () => pgConnector({ port: '5432' as unknown as number }),
      () => mysql2Connector('mysql://root@127.0.0.1:3306/test'),
      () => mysql2Connector({ host: '127.0.0.1', connectTimeout: 2_000 }),
      () => redisConnector('rediss://127.0.0.1:6380/2'),
      () => redisConnector('/tmp/redis.sock'),
      () => sharedRedisConnector({ host: '127.0.0.1', connectTimeout: 0 }),
      () => amqpConnector('amqps://guest:guest@127.0.0.1'),
      () => amqpConnector({ hostname: '127.0.0.1', heartbeat: 0 }),
    ])
      expect(make).not.toThrow();
  });

  it('a connection made with amqplib itself is refused where its settings belong', async () => {
    const connection = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    try {
      refused(() => amqpConnector(connection as never), /is a live amqplib connection/);
    } finally {
      await connection.close();
    }
  });

  it('leaves nothing open: the pools and clients it was shown are closed here', async () => {
    await pool.end();
    await mysqlPool.end();
    redis.disconnect();
    expect(pool.ended).toBe(true);
  });
});
