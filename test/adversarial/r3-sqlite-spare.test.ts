/**
 * Round 3, SqliteStore's database thread: a closed store's thread is kept (`spare`) and
 * serves the next store. An answer the old store's thread sends after 'closed' must never
 * reach the new store's calls (call ids are unique in the process).
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, SqliteStore } from '../../node/sqlite-store.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';
import { intentRecord } from '../store-conformance.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function dir() {
  const made = await tempStoreDir();
  cleanups.push(made.remove);
  return made.dir;
}

/** A row that is not JSON: `list()` reads, then quarantines it in a write of its own. */
function tamper(file: string, scope: string, name: string) {
  const db = new DatabaseSync(file);
  db.prepare(`INSERT INTO intents (scope, name, state, sweep_at, record) VALUES (?, ?, 'ready', 0, 'not json')`).run(
    scope,
    name,
  );
  db.close();
}

describe('r3: SqliteStore thread reuse', () => {
  it("a call of a closed store settles, and its late answer is never another store's", async () => {
    for (let round = 0; round < 10; round++) {
      const dirA = await dir();
      const a = await openSqliteStore({ dir: dirA, fsync: false }); // call 1: open
      await a.claim(intentRecord('s', 'a')); // call 2
      tamper(path.join(dirA, 'intents.db'), 's', 'bad');
      // call 3: a read, then (after close began) a quarantine write on a closed database
      const listed = a.list('s').then(
        (records) => ({ records }),
        (error: unknown) => ({ error }),
      );
      await a.close();
      const b = new SqliteStore({ dir: await dir(), fsync: false });
      cleanups.push(() => b.close());
      // b's calls 1..3 on the thread a left
      const got = await Promise.all([b.get('s', 'x'), b.get('s', 'y'), b.get('s', 'z')]);
      expect(got).toEqual([undefined, undefined, undefined]);
      const outcome = await listed;
      // Either a's list got its own answer or it failed "was closed": never hangs.
      if ('records' in outcome) expect(Array.isArray(outcome.records)).toBe(true);
      await b.close();
    }
  });
});
