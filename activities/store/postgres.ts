// The PostgreSQL backend: objects as rows of one table, shared by every worker that is
// given the same database — the database a multi-host deployment already runs for
// Temporal. A write is `INSERT … ON CONFLICT DO NOTHING` (first write wins, as the
// interface asks); a committed row is durable as far as the server's fsync settings make it.
//
// `pg` loads with the first query: every worker opens its store at start, and most use the
// local directory, for which loading the driver was ~75 ms of CPU at each start.
import type pg from 'pg';
import type { ObjectStore } from './interface';

const TABLE = 'keel_store_objects';

/** `postgres://user@host:port/db` without the password, for messages. */
export function describePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `${u.protocol}//${user}${u.host}${u.pathname}`;
  } catch {
    return 'postgres (unparsable KEEL_STORE_URL)';
  }
}

export class PostgresStore implements ObjectStore {
  readonly kind = 'postgres' as const;
  readonly where: string;
  private readonly options: pg.PoolConfig;
  private pooled: Promise<pg.Pool> | null = null;
  private ready: Promise<void> | null = null;

  constructor(url: string, options: { maxConnections?: number } = {}) {
    this.where = describePostgresUrl(url);
    this.options = {
      connectionString: url,
      max: options.maxConnections ?? 4,
      // A store that does not answer fails the call in seconds, with its cause, not at the activity's timeout.
      connectionTimeoutMillis: 10_000,
      idleTimeoutMillis: 30_000,
    };
  }

  /** The connection pool, made on first use. */
  private pool(): Promise<pg.Pool> {
    this.pooled ??= import('pg').then(({ default: driver }) => {
      const pool = new driver.Pool(this.options);
      // An idle connection the server drops is the pool's to replace, not a crash of the worker.
      pool.on('error', () => {});
      return pool;
    });
    return this.pooled;
  }

  /** Creates the table once per process (every worker may be the first; the lock keeps two from racing). */
  private schema(): Promise<void> {
    this.ready ??= (async () => {
      const client = await (await this.pool()).connect();
      try {
        // Already there (the usual case, and the only one a read-only replica can serve).
        const found = await client.query<{ t: string | null }>(`SELECT to_regclass('${TABLE}') AS t`);
        if (found.rows[0]?.t) return;
        await client.query('BEGIN');
        await client.query("SELECT pg_advisory_xact_lock(hashtext('keel_store_schema'))");
        await client.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (key text PRIMARY KEY, body bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    })().catch((error: unknown) => {
      this.ready = null; // the next call tries again (the server may come back)
      throw error;
    });
    return this.ready;
  }

  async get(key: string): Promise<Buffer | null> {
    await this.schema();
    const result = await (await this.pool()).query<{ body: Buffer }>(`SELECT body FROM ${TABLE} WHERE key = $1`, [key]);
    return result.rows[0]?.body ?? null;
  }

  async has(key: string): Promise<boolean> {
    await this.schema();
    const result = await (await this.pool()).query(`SELECT 1 FROM ${TABLE} WHERE key = $1`, [key]);
    return (result.rowCount ?? 0) > 0;
  }

  async putIfAbsent(key: string, body: Buffer): Promise<void> {
    await this.schema();
    await (await this.pool()).query(`INSERT INTO ${TABLE} (key, body) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, [key, body]);
  }

  async close(): Promise<void> {
    if (this.pooled) await (await this.pooled).end();
  }
}
