// Accounts and notes on the real PostgreSQL for the specs that run ORMs on the pool: transfers
// between accounts keep the total only if no transaction interleaves with another.
import pg from 'pg';

export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

/** One seeded transfer: `fails` ones throw half-way, after taking the amount out. */
export interface Transfer {
  readonly from: number;
  readonly to: number;
  readonly amount: number;
  readonly fails: boolean;
}

/** A table of `count` accounts holding `start` each, and a table of notes, read by a client of their own. */
export class PgLedger {
  #observer: pg.Client | undefined;

  constructor(
    readonly accounts: string,
    readonly notes: string,
    readonly count: number,
    readonly start: number,
  ) {}

  get #db(): pg.Client {
    if (this.#observer === undefined) throw new Error('PgLedger.open() first');
    return this.#observer;
  }

  async open(): Promise<void> {
    this.#observer = new pg.Client(DATABASE_URL);
    await this.#observer.connect();
    await this.#db.query(`CREATE TABLE IF NOT EXISTS ${this.notes} (id serial PRIMARY KEY, who text NOT NULL)`);
  }

  async close(): Promise<void> {
    await this.#db.query(`DROP TABLE IF EXISTS ${this.accounts}; DROP TABLE IF EXISTS ${this.notes}`);
    await this.#db.end();
  }

  /** The accounts, each at `start` again. */
  async freshAccounts(): Promise<void> {
    await this.#db.query(`DROP TABLE IF EXISTS ${this.accounts}`);
    await this.#db.query(
      `CREATE TABLE ${this.accounts} (id integer PRIMARY KEY, balance integer NOT NULL CHECK (balance >= 0))`,
    );
    await this.#db.query(
      `INSERT INTO ${this.accounts} SELECT i, ${this.start} FROM generate_series(1, ${this.count}) i`,
    );
  }

  async total(): Promise<number> {
    const seen = await this.#db.query<{ s: string }>(`SELECT sum(balance) AS s FROM ${this.accounts}`);
    return Number(seen.rows[0]!.s);
  }

  /** How many notes `who` left. */
  async rowsOf(who: string): Promise<number> {
    const seen = await this.#db.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.notes} WHERE who = $1`, [who]);
    return Number(seen.rows[0]!.n);
  }

  /** Sessions of `application` (a connection string's `application_name`) left idle inside a transaction. */
  async idleInTransaction(application: string): Promise<number> {
    const seen = await this.#db.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'",
      [application],
    );
    return Number(seen.rows[0]!.n);
  }

  /** `n` transfers between seeded random accounts, one in nine failing half-way. */
  transfers(n: number, seed = 7): Transfer[] {
    let state = seed;
    const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    return Array.from({ length: n }, (_, i) => {
      const from = 1 + Math.floor(next() * this.count);
      const to = 1 + ((from + Math.floor(next() * (this.count - 1))) % this.count);
      return { from, to, amount: 1 + Math.floor(next() * 50), fails: i % 9 === 4 };
    });
  }
}
