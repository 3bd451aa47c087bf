import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../postgres/postgres-store.js';
import { useTestDatabase } from './postgres/database.js';
import { runStoreConformance } from './store-conformance.js';

const db = useTestDatabase();

runStoreConformance('PostgresStore', async () => {
  await db.reset();
  const pool = db.pool({ max: 4 });
  return {
    store: new PostgresStore({ pool }),
    reopen: async () => new PostgresStore({ pool: db.pool({ max: 4 }) }),
  };
});

describe('PostgresStore: schema', () => {
  it('migrate() is idempotent and reports the version', async () => {
    const store = new PostgresStore({ pool: db.admin });
    expect(await store.migrate()).toEqual({ applied: [], version: 1 });
  });
});
