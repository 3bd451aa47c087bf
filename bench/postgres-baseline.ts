/**
 * The PostgreSQL baselines every oncely figure is a ratio of, on the same pool. One copy,
 * so the bench and its profile measure against the same statements.
 * - `rawInsert`: one raw claim-shaped INSERT per request, prepared (the naive baseline).
 * - `batchedInsert`: the same INSERT grouped as PostgresStore groups its writes
 *   (postgres/group-writes.ts): at most `limit` statements at once; what waits meanwhile goes
 *   as one statement of up to 64 rows (a JSON parameter), a lone insert as the single one.
 *   Without it, a ratio at c=64 credits the store's batching to oncely (issue 30 §3).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';

const COLUMNS = `scope, name, key, state, attempts, created_at, updated_at`;

export const rawInsert = (pool: pg.Pool) => (name: string) =>
  pool.query({
    name: 'raw_insert',
    text: `INSERT INTO oncely_intents (${COLUMNS})
           VALUES ($1, $2, $3, 'ready', 0, $4, $4) ON CONFLICT (scope, name) DO NOTHING RETURNING version`,
    values: ['raw', name, randomUUID(), Date.now()],
  });

export function batchedInsert(pool: pg.Pool, limit = 4): (name: string) => Promise<void> {
  const single = rawInsert(pool);
  const waiting: { name: string; done: () => void; failed: (error: unknown) => void }[] = [];
  let running = 0;
  const group = (rows: typeof waiting) =>
    pool.query({
      name: 'raw_insert_group',
      text: `INSERT INTO oncely_intents (${COLUMNS})
             SELECT scope, name, key, 'ready', 0, created_at, created_at
             FROM json_to_recordset($1::json) AS v(scope text, name text, key text, created_at bigint)
             ON CONFLICT (scope, name) DO NOTHING RETURNING version`,
      values: [
        JSON.stringify(rows.map((r) => ({ scope: 'raw', name: r.name, key: randomUUID(), created_at: Date.now() }))),
      ],
    });
  const pump = () => {
    while (running < limit && waiting.length > 0) {
      const rows = waiting.splice(0, 64);
      running++;
      (rows.length === 1 ? single(rows[0]!.name) : group(rows))
        .then(
          () => {
            for (const r of rows) r.done();
          },
          (error: unknown) => {
            for (const r of rows) r.failed(error);
          },
        )
        .finally(() => {
          running--;
          pump();
        });
    }
  };
  return (name) =>
    new Promise<void>((done, failed) => {
      waiting.push({ name, done, failed });
      pump();
    });
}
