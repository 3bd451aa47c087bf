/**
 * An acknowledged intent is durable (design rule 13): every `intent()` that resolved
 * before the server was stopped with `pg_ctl -m immediate` (a crash: no shutdown
 * checkpoint, WAL buffers not yet written are lost) is there after the restart. The WAL
 * writer is slowed so that a commit that did not wait for its flush would be lost.
 */
import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../postgres/postgres-store.js';
import { createClient } from '../src/client.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase({ settings: { wal_writer_delay: '10s', wal_writer_flush_after: '1GB' } });

describe('PostgresStore: acknowledged claims survive an immediate stop', () => {
  it('every intent() that resolved is stored with its key after pg_ctl stop -m immediate', async () => {
    await db.reset();
    const fetch = async () => {
      throw new Error('nothing is sent in this test');
    };
    const store = new PostgresStore({ pool: db.pool({ max: 8 }) });
    const api = createClient({ baseUrl: 'https://api.test/', scope: 'crash', store, fetch });
    const names = Array.from({ length: 200 }, (_, i) => `order:${i}`);
    const acknowledged = new Map<string, string>();
    await Promise.all(
      names.map(async (name) => {
        const intent = await api.intent(name);
        acknowledged.set(name, intent.key);
      }),
    );
    await db.cluster.restart('immediate');
    const after = await new PostgresStore({ pool: db.pool({ max: 1 }) }).list('crash');
    const stored = new Map(after.map((record) => [record.name, record.key]));
    const lost = names.filter((name) => stored.get(name) !== acknowledged.get(name));
    expect(lost).toEqual([]);
  }, 60_000);
});
