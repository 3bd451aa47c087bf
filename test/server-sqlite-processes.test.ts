/**
 * SqliteKeyStore across processes (real files, fsync): a server SIGKILLed mid-handler
 * leaves no key and no effect, and the next attempt runs once; one killed after its commit
 * (the answer never sent) is replayed; two processes on one file racing one key make one
 * effect (the other waits for the write lock, then replays); 6 processes × bursts of 3:
 * one effect; a process whose lock wait runs out gets a StoreError, never a second effect.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteKeyStore, type SqliteKeyStore } from '../node/sqlite-key-store.js';
import { createIdempotency } from '../src/server/index.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { bundleChild } from './helpers/bundle-child.js';
import { type LineChild, LineChildren } from './helpers/line-child.js';

let dir = '';
let child = '';
let remove = async () => {};
beforeAll(async () => {
  ({ dir, remove } = await tempStoreDir());
  child = path.join(dir, 'server-sqlite-child.mjs');
  await writeFile(path.join(dir, 'package.json'), '{"type":"module"}');
  await bundleChild(fileURLToPath(new URL('./fixtures/server-sqlite-child.ts', import.meta.url)), child);
});
afterAll(() => remove());

const children = new LineChildren();
const stores: SqliteKeyStore[] = [];
afterEach(async () => {
  await children.killAll();
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

const start = (args: string[]): LineChild => children.start(child, args);

let files = 0;
const fileOf = () => path.join(dir, `shop-${++files}.db`);

const post = (key: string) =>
  new Request('http://shop.test/payments', {
    method: 'POST',
    headers: { 'Idempotency-Key': `"${key}"`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 5 }),
  });

/** This process as the next server on the file: the same route as the child's. */
async function restarted(file: string) {
  const store = await openSqliteKeyStore({ file, autoMaintain: false });
  stores.push(store);
  await store.transaction((tx) =>
    tx.exec('CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, key TEXT NOT NULL, amount INTEGER NOT NULL)'),
  );
  const payments = createIdempotency({ store }).route('POST /payments', async ({ tx, json, key }) => {
    const { amount } = json as { amount: number };
    const row = tx.get<{ id: number }>('INSERT INTO ledger (key, amount) VALUES (?, ?) RETURNING id', key, amount)!;
    return { status: 201, body: { id: row.id, amount } };
  });
  const look = new DatabaseSync(file, { readOnly: true });
  const count = (sql: string, key: string) => Number(look.prepare(sql).get(key)!.n);
  return {
    payments,
    ledgerRows: (key: string) => count('SELECT count(*) AS n FROM ledger WHERE key = ?', key),
    keyRows: (key: string) => count('SELECT count(*) AS n FROM oncely_server_keys WHERE key = ?', key),
  };
}

describe('SqliteKeyStore: a server process killed', () => {
  it('SIGKILL mid-handler (ledger row written, not committed): no key, no effect; the next attempt runs once', async () => {
    const file = fileOf();
    const c = start([file, 'hang', 'killed']);
    await c.waitFor('written');
    await c.kill();
    const next = await restarted(file);
    expect(next.ledgerRows('killed')).toBe(0);
    expect(next.keyRows('killed')).toBe(0);
    const again = await next.payments(post('killed'));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect((await next.payments(post('killed'))).headers.get('idempotent-replayed')).toBe('true');
    expect(next.ledgerRows('killed')).toBe(1);
  });

  it('SIGKILL after the commit, the answer never sent: the retry gets the committed answer, byte for byte', async () => {
    const file = fileOf();
    const c = start([file, 'commit', 'sent']);
    const line = await c.waitFor('committed');
    await c.kill();
    const [, status, body] = line.match(/^committed (\d+) (.*)$/)!;
    const next = await restarted(file);
    const replay = await next.payments(post('sent'));
    expect(replay.status).toBe(Number(status));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.text()).toBe(body);
    expect(next.ledgerRows('sent')).toBe(1);
    expect(next.keyRows('sent')).toBe(1);
  });
});

describe('SqliteKeyStore: two processes on one file', () => {
  it('one key at the same instant: one effect; the other waits for the write lock and replays', async () => {
    const file = fileOf();
    const a = start([file, 'race', 'shared', '500']);
    const b = start([file, 'race', 'shared', '500']);
    await Promise.all([a.waitFor('ready'), b.waitFor('ready')]);
    a.proc.stdin.write('go\n');
    b.proc.stdin.write('go\n');
    const done = await Promise.all([a.waitFor('done'), b.waitFor('done')]);
    await Promise.all([a.waitFor('end'), b.waitFor('end')]);
    // One ran; the other could not see its running key (another process), waited for the
    // write lock, found the committed row under it and replayed.
    expect(done.sort()).toEqual(['done 201 ran', 'done 201 replayed']);
    const next = await restarted(file);
    expect(next.ledgerRows('shared')).toBe(1);
    expect(next.keyRows('shared')).toBe(1);
  });

  it('6 processes × a burst of 3 with one key: one effect; the others replay or get 409, never an error', async () => {
    const file = fileOf();
    await (await restarted(file)).payments(post('warm')); // the file and its tables exist before the race
    const children = Array.from({ length: 6 }, () => start([file, 'race', 'burst', '300', '3']));
    await Promise.all(children.map((c) => c.waitFor('ready')));
    for (const c of children) c.proc.stdin.write('go\n');
    await Promise.all(children.map((c) => c.waitFor('end')));
    const answers = children.flatMap((c) => c.lines.filter((line) => /^(done|error)/.test(line)));
    const count = (line: string) => answers.filter((a) => a === line).length;
    expect(answers).toHaveLength(18);
    expect(count('done 201 ran')).toBe(1);
    // Each other process replays at least once: its first request, after the write lock (or
    // from the committed row, when its "go" came late, and then its repeats replay too).
    expect(count('done 201 replayed')).toBeGreaterThanOrEqual(5);
    // The running process's two repeats at least: in flight there, 409 (no replay marker).
    expect(count('done 409 ran')).toBeGreaterThanOrEqual(2);
    expect(count('done 201 ran') + count('done 201 replayed') + count('done 409 ran')).toBe(18);
    const next = await restarted(file);
    expect(next.ledgerRows('burst')).toBe(1);
    expect(next.keyRows('burst')).toBe(1);
  });

  it('a write lock held past lockTimeout by another process: a StoreError, nothing ran; then the key runs once', async () => {
    const file = fileOf();
    await restarted(file); // migrated, with its ledger: the waiter opens it without the write lock
    const holder = start([file, 'hang', 'holder']);
    await holder.waitFor('written');
    const waiter = start([file, 'race', 'waits', '0', '1', '300']);
    await waiter.waitFor('ready');
    waiter.proc.stdin.write('go\n');
    expect(await waiter.waitFor('error')).toMatch(/write lock for more than 300 ms; nothing ran/);
    await holder.kill();
    const next = await restarted(file);
    expect(next.ledgerRows('waits')).toBe(0);
    expect((await next.payments(post('waits'))).status).toBe(201);
    expect(next.ledgerRows('waits')).toBe(1);
  });
});
