/**
 * The PostgreSQL baseline every oncely figure is a ratio of: one raw claim-shaped INSERT
 * per request, prepared, on the same pool. One copy, so the bench and its profile measure
 * against the same statement.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';

export const rawInsert = (pool: pg.Pool) => (name: string) =>
  pool.query({
    name: 'raw_insert',
    text: `INSERT INTO oncely_intents (scope, name, key, state, attempts, created_at, updated_at)
           VALUES ($1, $2, $3, 'ready', 0, $4, $4) ON CONFLICT (scope, name) DO NOTHING RETURNING version`,
    values: ['raw', name, randomUUID(), Date.now()],
  });
