/**
 * From a second adversarial review of the kept lock (fixed: a note not of its intent is dropped, never stored).
 *
 * A shape-valid note filed under another intent's lock (garbage under the prefix: another
 * build of the app, a hand edit, a bug) with the browser's real store. IdbStore refuses a
 * record of another name (validRecord); applySentNote throws before `note.drop()`, so the
 * note is never dropped and every read under the lock throws: hold's read, sync(), forget(),
 * and — since the strict `begin` applies notes — every call of the intent. (MemoryStore does
 * not validate, so the same note passes there.)
 */
import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../../browser/cross-tab.js';
import { IdbStore } from '../../browser/idb-store.js';
import { createClient } from '../../src/index.js';
import { NoteMap } from '../adversarial/harness.js';
import { wireServer } from '../helpers/wire-server.js';

const closing: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c();
});

describe('a garbage note with IndexedDB', () => {
  it('blocks the intent for good: every call and sync() fail, the note stays', async () => {
    const server = await wireServer(() => ({ status: 201, body: { id: 'p' } }));
    closing.push(() => server.close());
    const notes = new NoteMap();
    const channel = `oncely-attack2-idb-${process.pid}`;
    const coordinator = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes });
    const client = createClient({
      baseUrl: server.url,
      store: new IdbStore({ indexedDB: new IDBFactory() }),
      coordinator,
    });
    closing.push(() => client.close());
    const intent = await client.intent('checkout:1');
    notes.setItem(
      `${channel}:sent:${JSON.stringify(['default', 'checkout:1'])}`,
      JSON.stringify({ ...intent.record, key: 'another-key', name: 'checkout:2', state: 'in_flight', attempts: 1 }),
    );
    const results: string[] = [];
    for (let i = 0; i < 2; i++)
      results.push(
        await intent.post('pay', { json: { a: 1 } }).then(
          (r) => `sent ${r.status}`,
          (e: Error) => e.name,
        ),
      );
    results.push(
      await intent.sync().then(
        () => 'synced',
        (e: Error) => e.name,
      ),
    );
    expect({ results, requests: server.requests.length, noteLeft: notes.map.size }).toEqual({
      results: ['sent 201', 'sent 201', 'synced'],
      requests: 2,
      noteLeft: 0,
    });
  });
});
