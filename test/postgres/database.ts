/**
 * Shared by the PostgreSQL test files: one throwaway cluster per file (a file that
 * restarts the server disturbs nobody else), pools that close with it, a migrated schema.
 */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../../postgres/postgres-store.js';
import { type Cluster, type ClusterOptions, startCluster } from './cluster.js';

export interface TestDatabase {
  cluster: Cluster;
  /** Connection settings for `pg` (and for child processes, as JSON). */
  config: pg.PoolConfig;
  /** A new pool, ended after the file; idle-connection errors are swallowed (restarts). */
  pool(options?: pg.PoolConfig): pg.Pool;
  /** Empties the intents table. */
  reset(): Promise<void>;
  admin: pg.Pool;
}

export function connectionConfig(cluster: Cluster): pg.PoolConfig {
  return { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database };
}

/** Starts a cluster in `beforeAll`, migrates it, and stops it in `afterAll`. */
export function useTestDatabase(options: ClusterOptions = {}): TestDatabase {
  const pools: pg.Pool[] = [];
  const db = {} as TestDatabase;
  beforeAll(async () => {
    db.cluster = await startCluster(options);
    db.config = connectionConfig(db.cluster);
    db.pool = (extra = {}) => {
      const pool = new pg.Pool({ ...db.config, ...extra });
      pool.on('error', () => undefined);
      pools.push(pool);
      return pool;
    };
    db.admin = db.pool({ max: 2 });
    await new PostgresStore({ pool: db.admin }).migrate();
    db.reset = async () => {
      await db.admin.query('TRUNCATE oncely_intents');
    };
  }, 60_000);
  afterAll(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end().catch(() => undefined)));
    await db.cluster?.stop();
  }, 60_000);
  return db;
}
