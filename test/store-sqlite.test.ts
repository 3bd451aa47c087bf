import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, SqliteStore, StoreFileError } from '../node/sqlite-store.js';
import { defaultStateDir } from '../node/state-dir.js';
import { WAL_CAP } from '../node/wal-zeros.js';
import { CorruptRecordError, InvalidArgumentError, StoreError } from '../src/errors.js';
import type { IntentRecord, StoreEvent } from '../src/store/store.js';
import { filesUnder, tempStoreDir } from './fixtures/store-dirs.js';
import { intentRecord, runStoreConformance } from './store-conformance.js';

runStoreConformance(
  'SqliteStore',
  async () => {
    const { dir, remove } = await tempStoreDir();
    return { store: new SqliteStore({ dir }), reopen: () => openSqliteStore({ dir }), cleanup: remove };
  },
  { utf8Names: true },
);

runStoreConformance('SqliteStore (relaxed writes, no fsync)', async () => {
  const { dir, remove } = await tempStoreDir();
  const store = new SqliteStore({ dir, fsync: false });
  const relaxed = {
    ...store,
    claim: (fresh: IntentRecord) => store.claim(fresh, { durability: 'relaxed' }),
    get: store.get.bind(store),
    update: (scope: string, name: string, updater: Parameters<SqliteStore['update']>[2]) =>
      store.update(scope, name, updater, { durability: 'relaxed' }),
    delete: store.delete.bind(store),
    list: store.list.bind(store),
    clear: store.clear.bind(store),
    sweep: store.sweep.bind(store),
    close: store.close.bind(store),
  };
  return { store: relaxed, reopen: () => openSqliteStore({ dir }), cleanup: remove };
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  const { dir, remove } = await tempStoreDir();
  cleanups.push(remove);
  const events: StoreEvent[] = [];
  const open = async () => {
    const store = await openSqliteStore({ dir });
    store.subscribe((event) => events.push(event));
    cleanups.push(() => store.close());
    return store;
  };
  return { dir, file: path.join(dir, 'intents.db'), events, store: await open(), open };
}

/** Writes a row behind the store's back, as a damaged or hand-edited file would hold it. */
function tamper(file: string, scope: string, name: string, text: string, state = 'ready') {
  const db = new DatabaseSync(file);
  db.prepare(
    `INSERT INTO intents (scope, name, state, sweep_at, record) VALUES (?, ?, ?, 0, ?)
     ON CONFLICT DO UPDATE SET record = excluded.record, state = excluded.state`,
  ).run(scope, name, state, text);
  db.close();
}

describe('SqliteStore file', () => {
  it('keeps everything in one database file (WAL), schema versioned, under the state directory rules', async () => {
    const { dir, file, store } = await setup();
    await store.claim(intentRecord('u1', 'a'));
    expect((await filesUnder(dir)).filter((name) => !name.endsWith('-wal') && !name.endsWith('-shm'))).toEqual([
      'intents.db',
    ]);
    const db = new DatabaseSync(file, { readOnly: true });
    expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect(db.prepare('PRAGMA user_version').get()).toEqual({ user_version: 1 });
    db.close();
    expect(await store.integrityCheck()).toEqual(['ok']);
    expect(new SqliteStore().file).toBe(path.join(defaultStateDir(), 'intents.db'));
  });

  it('accepts any scope or name: slashes, unicode, NUL, empty, 10 kB', async () => {
    const { store, open } = await setup();
    const names = [
      'a/b',
      '../../etc/passwd',
      '',
      'café',
      'cafe\u0301',
      '💳 — חשבון',
      'nul\u0000byte',
      'x'.repeat(10_000),
    ];
    const scopes = ['tenant/../other', '💼', 'y'.repeat(10_000)];
    for (const scope of scopes) {
      for (const [i, name] of names.entries()) await store.claim(intentRecord(scope, name, { key: `k${i}` }));
    }
    const again = await open();
    for (const scope of scopes) {
      expect((await again.list(scope)).map((record) => record.name).sort()).toEqual([...names].sort());
      for (const [i, name] of names.entries()) expect((await again.get(scope, name))?.key).toBe(`k${i}`);
    }
  });

  it('keeps ttl and lease faithfully', async () => {
    const { store, open } = await setup();
    const record = intentRecord('u1', 'pay', { state: 'in_flight', ttl: 3_600_000, lease: { owner: 'o1', until: 42 } });
    await store.claim(record);
    expect(await (await open()).get('u1', 'pay')).toEqual(record);
  });

  it('rejects records that would not read back, and updaters that throw, leaving the rest of the commit', async () => {
    const { store } = await setup();
    const bad = { ...intentRecord('u1', 'a'), key: '' };
    const [rejected, fine] = await Promise.allSettled([
      store.claim(bad),
      store.claim(intentRecord('u1', 'b')),
      store.update('u1', 'b', () => {
        throw new Error('updater failed');
      }),
    ]);
    expect(rejected).toMatchObject({ status: 'rejected', reason: expect.any(InvalidArgumentError) });
    expect(fine).toMatchObject({ status: 'fulfilled' });
    await expect(store.update('u1', 'b', (current) => current && { ...current, name: 'c' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect((await store.list('u1')).map((record) => record.name)).toEqual(['b']);
  });

  it('sweeps in bounded batches, oldest first, each call going on where the last stopped', async () => {
    const { store } = await setup();
    for (let i = 0; i < 25; i++) {
      await store.claim(intentRecord('u1', `done:${i}`, { state: 'succeeded', updatedAt: 1_000 + i, ttl: 10 }));
    }
    await store.claim(intentRecord('u1', 'open', { state: 'unknown', updatedAt: 0, ttl: 10 }));
    const removed = [];
    for (let call = 0; call < 4; call++) removed.push(await store.sweep('u1', 10_000, { limit: 10 }));
    expect(removed).toEqual([10, 10, 5, 0]);
    expect((await store.list('u1')).map((record) => record.name)).toEqual(['open']);
  });

  it('a store past 100 commits checkpoints from a worker thread; its WAL is reused, close stops the worker', async () => {
    const { dir, file, store, open } = await setup();
    // Measured before the claims: the checkpointer may already have run when they end.
    const initial = (await stat(file)).size;
    for (let i = 0; i < 150; i++) await store.claim(intentRecord('u1', `a:${i}`));
    // The worker checkpoints (every 200 ms): the pages reach the database file, and the next
    // commits reuse the WAL from its start.
    const walSize = async () => (await stat(`${file}-wal`)).size;
    const before = await walSize();
    // Until the file has grown and stayed put over a tick of the checkpointer: all backfilled.
    for (let wait = 0, last = -1; wait < 40; wait++) {
      const size = (await stat(file)).size;
      if (size > initial && size === last) break;
      last = size;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect((await stat(file)).size).toBeGreaterThan(initial);
    // Relaxed writes (claims are always synced now): group-committed, as the first batch's WAL was.
    for (let i = 0; i < 150; i++)
      await store.update('u1', `b:${i}`, () => intentRecord('u1', `b:${i}`), { durability: 'relaxed' });
    await store.update('u1', 'a:0', (current) => current && { ...current, state: 'unknown' });
    expect(await walSize()).toBeLessThanOrEqual(before * 1.5);
    await store.close();
    const again = await open();
    expect(await again.list('u1')).toHaveLength(300);
    expect((await again.get('u1', 'a:0'))?.state).toBe('unknown');
    expect(await filesUnder(dir)).toContain('intents.db');
  });

  it('the WAL grows a chunk of zeros ahead of its frames; a copy taken mid-run, as a crash leaves it, opens with every record', async () => {
    const { file, store } = await setup();
    for (let i = 0; i < 40; i++) await store.claim(intentRecord('u1', `z:${i}`));
    // Synced frames plus at least one chunk of zeros past them: later commits overwrite blocks the file has.
    expect((await stat(`${file}-wal`)).size).toBeGreaterThanOrEqual(1 << 20);
    // The files as they are on disk now, the store still open (no checkpoint at close): SQLite recovers the
    // frames from the WAL and takes the zeros after them for no frame.
    const { dir: copy, remove } = await tempStoreDir();
    cleanups.push(remove);
    for (const suffix of ['', '-wal'])
      await writeFile(path.join(copy, `intents.db${suffix}`), await readFile(`${file}${suffix}`));
    const recovered = await openSqliteStore({ dir: copy });
    cleanups.push(() => recovered.close());
    expect(await recovered.list('u1')).toHaveLength(40);
    expect(await recovered.integrityCheck()).toEqual(['ok']);
    // And the store goes on writing after the zeros were reached by its own frames.
    for (let i = 0; i < 300; i++) await store.update('u1', 'z:0', (c) => c && { ...c, attempts: i });
    expect((await store.get('u1', 'z:0'))?.attempts).toBe(299);
    expect(await store.integrityCheck()).toEqual(['ok']);
  });

  it('under writes that never pause the WAL stays bounded: past WAL_CAP its writer checkpoints, and SQLite starts it over', {
    timeout: 120_000,
  }, async () => {
    const { file, store } = await setup();
    let n = 0;
    // 64 at a time, back to back: the checkpointer thread's checkpoints never catch up with the
    // commits on their own, and the WAL grew by its frames plus as many bytes of zeros (160 MB in 3 s).
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        for (let i = 0; i < 500; i++) await store.claim(intentRecord('u1', `w:${n++}`));
      }),
    );
    expect((await stat(`${file}-wal`)).size).toBeLessThan(WAL_CAP + (1 << 20));
    expect(await store.list('u1')).toHaveLength(64 * 500);
    expect(await store.integrityCheck()).toEqual(['ok']);
  });

  it("a new WAL gets no zeros from its first commits: a short-lived process's claims flush only their frames", async () => {
    const { file, store } = await setup();
    for (let i = 0; i < 3; i++) await store.claim(intentRecord('u1', `short:${i}`));
    expect((await stat(`${file}-wal`)).size).toBeLessThan(128 << 10);
  });

  it('a claim resolves only once the WAL is synced, even when asked for relaxed durability', async () => {
    const { store } = await setup();
    await store.claim(intentRecord('u1', 'warm'));
    // The database thread reports its syncs of the WAL with its answers, on the commit channel.
    let syncs = 0;
    const count = (message: unknown) => {
      syncs += (message as { syncs?: number }).syncs ?? 0;
    };
    subscribe('oncely:sqlite:commit', count);
    try {
      await store.claim(intentRecord('u1', 'a'), { durability: 'relaxed' });
      expect(syncs).toBeGreaterThan(0);
      syncs = 0;
      // Relaxed updates stay relaxed (an outcome whose loss only causes a resend under the same key).
      await store.update('u1', 'a', (current) => current && { ...current, attempts: 1 }, { durability: 'relaxed' });
      expect(syncs).toBe(0);
    } finally {
      unsubscribe('oncely:sqlite:commit', count);
    }
  });

  it("a relaxed update goes with the next call of its turn, in that call's commit and sync; alone, after the loop's I/O", async () => {
    const { store } = await setup();
    await store.claim(intentRecord('u1', 'a'));
    const answers: { worker: { writes: number }[]; syncs: number }[] = [];
    const record = (message: unknown) => answers.push(message as (typeof answers)[number]);
    subscribe('oncely:sqlite:commit', record);
    try {
      const relaxed = store.update('u1', 'a', (c) => c && { ...c, attempts: 1 }, { durability: 'relaxed' });
      // As an engine's next call comes: after promise jobs and work, long enough for the thread to commit alone.
      await Promise.resolve();
      const until = performance.now() + 20;
      while (performance.now() < until);
      await Promise.all([relaxed, store.claim(intentRecord('u1', 'b'))]);
      expect(answers.flatMap((a) => a.worker).map((c) => c.writes)).toEqual([2]);
      expect(answers.reduce((n, a) => n + a.syncs, 0)).toBe(1);
      answers.length = 0;
      await store.update('u1', 'a', (c) => c && { ...c, attempts: 2 }, { durability: 'relaxed' });
      expect(answers.flatMap((a) => a.worker).map((c) => c.writes)).toEqual([1]);
      expect((await store.get('u1', 'a'))?.attempts).toBe(2);
    } finally {
      unsubscribe('oncely:sqlite:commit', record);
    }
  });

  it('fails with a StoreError after close', async () => {
    const { store } = await setup();
    await store.close();
    await expect(store.get('u1', 'a')).rejects.toBeInstanceOf(StoreError);
  });
});

describe('SqliteStore under another process lock', () => {
  it('waits from a timer while another connection holds the write lock: the event loop keeps running', async () => {
    const { file, store } = await setup();
    const other = new DatabaseSync(file);
    other.exec('BEGIN IMMEDIATE');
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const claim = store.claim(intentRecord('u1', 'a'));
    const update = store.update('u1', 'a', (current) => current && { ...current, attempts: 1 });
    while (ticks < 20) await new Promise((resolve) => setTimeout(resolve, 1));
    other.exec('COMMIT');
    other.close();
    clearInterval(ticker);
    expect((await claim).created).toBe(true);
    expect((await update)?.attempts).toBe(1);
  });

  it('opens a file of its schema while another connection holds the write lock: opening takes no write lock', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const first = await openSqliteStore({ dir });
    await first.claim(intentRecord('u1', 'a'));
    await first.close();
    const other = new DatabaseSync(path.join(dir, 'intents.db'));
    other.exec('BEGIN IMMEDIATE');
    try {
      const store = await openSqliteStore({ dir, lockTimeout: 200 });
      cleanups.push(() => store.close());
      expect((await store.get('u1', 'a'))?.name).toBe('a');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  });

  it('gives up with a StoreError after lockTimeout, having written nothing', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const store = await openSqliteStore({ dir, lockTimeout: 50 });
    cleanups.push(() => store.close());
    const other = new DatabaseSync(path.join(dir, 'intents.db'));
    other.exec('BEGIN IMMEDIATE');
    const error = await store.claim(intentRecord('u1', 'a')).catch((e: unknown) => e);
    other.exec('ROLLBACK');
    other.close();
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'STORE_FAILED', message: expect.stringMatching(/locked/) });
    expect(await store.get('u1', 'a')).toBeUndefined();
  });
});

describe('SqliteStore: a database file it cannot use is reported, never replaced', () => {
  async function opening(content: Buffer | string | ((file: string) => void)) {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const file = path.join(dir, 'intents.db');
    if (typeof content === 'function') content(file);
    else await writeFile(file, content);
    const before = await readFile(file);
    const error = await openSqliteStore({ dir }).catch((e: unknown) => e);
    expect(await readFile(file)).toEqual(before);
    return error as StoreFileError;
  }

  it('garbage', async () => {
    const error = await opening(Buffer.from('garbage\u0000\u00ff'.repeat(500)));
    expect(error).toBeInstanceOf(StoreFileError);
    expect(error).toMatchObject({ code: 'STORE_FAILED', problem: 'not-a-database' });
  });

  it("another program's SQLite database", async () => {
    const error = await opening((file) => {
      const db = new DatabaseSync(file);
      db.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY); INSERT INTO invoices VALUES (1)');
      db.close();
    });
    expect(error).toMatchObject({ problem: 'foreign' });
  });

  it('a file of a newer oncely', async () => {
    const error = await opening((file) => {
      const db = new DatabaseSync(file);
      db.exec('PRAGMA application_id = 1869505329; PRAGMA user_version = 99; CREATE TABLE future (x)');
      db.close();
    });
    expect(error).toMatchObject({ problem: 'newer-schema' });
  });

  it('a damaged oncely database: typed errors, its bytes untouched', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const store = await openSqliteStore({ dir });
    await Promise.all(Array.from({ length: 500 }, (_, i) => store.claim(intentRecord('u1', `job:${i}`))));
    await store.close();
    const file = path.join(dir, 'intents.db');
    const bytes = await readFile(file);
    // Overwrite every page but the first (the header and schema stay readable).
    for (let i = 4096; i < bytes.length; i++) bytes[i] = (i * 7919) & 0xff;
    await writeFile(file, bytes);
    const again = await openSqliteStore({ dir }).catch((e: unknown) => e);
    const failure = again instanceof SqliteStore ? await again.list('u1').catch((e: unknown) => e) : (again as unknown);
    expect(failure).toBeInstanceOf(StoreError);
    expect(failure).toMatchObject({ code: 'STORE_FAILED' });
    if (again instanceof SqliteStore) await again.close();
    expect(await readFile(file)).toEqual(bytes);
  });
});

describe('SqliteStore quarantine', () => {
  const valid = (extra: Partial<IntentRecord> = {}) => intentRecord('u1', 'pay', { key: 'k-sent', ...extra });

  for (const [label, text] of [
    ['garbage', 'garbage\u0000\u00ff'],
    ['an empty value', ''],
    ['a truncated record', JSON.stringify(valid()).slice(0, 60)],
    ['a record of another intent', JSON.stringify(intentRecord('u1', 'other', { key: 'k-other' }))],
    ['a record with a numeric key', JSON.stringify({ ...valid(), key: 42 })],
    ['foreign JSON', '{"hello": "world"}'],
  ] as const) {
    it(`${label}: claim throws CorruptRecordError and never mints a key until the intent is deleted`, async () => {
      const { file, store, events, open } = await setup();
      tamper(file, 'u1', 'pay', text);
      const error = await store.claim(intentRecord('u1', 'pay', { key: 'k-new' })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptRecordError);
      expect(error).toMatchObject({ code: 'CORRUPT_RECORD', scope: 'u1', intent: 'pay' });
      const { location } = error as CorruptRecordError;
      expect(events).toEqual([
        { type: 'quarantine', reason: expect.stringMatching(/no usable key/), location, scope: 'u1', name: 'pay' },
      ]);
      expect(location).toMatch(/intents\.db#quarantine\/\d+$/);
      expect(await store.listQuarantined('u1')).toEqual([expect.objectContaining({ location, value: text })]);

      await expect(store.claim(intentRecord('u1', 'pay', { key: 'k-newer' }))).rejects.toBeInstanceOf(
        CorruptRecordError,
      );
      await expect(store.get('u1', 'pay')).rejects.toBeInstanceOf(CorruptRecordError);
      await expect(store.update('u1', 'pay', (r) => r)).rejects.toBeInstanceOf(CorruptRecordError);
      expect(await store.list('u1')).toEqual([]);
      expect(await store.sweep('u1', Number.MAX_SAFE_INTEGER)).toBe(0);
      await store.delete('u1', 'pay', 'k-new');
      const restarted = await open();
      await expect(restarted.claim(intentRecord('u1', 'pay'))).rejects.toBeInstanceOf(CorruptRecordError);
      expect(events).toHaveLength(1);

      // The app reconciled and forms the intent afresh.
      await store.delete('u1', 'pay');
      expect(await store.claim(intentRecord('u1', 'pay', { key: 'k-new' }))).toMatchObject({
        created: true,
        record: { key: 'k-new' },
      });
      await store.clear('u1');
      expect(await store.listQuarantined('u1')).toEqual([]);
    });
  }

  it('a damaged record whose key is readable keeps the key, as unknown', async () => {
    const { file, store, events } = await setup();
    tamper(file, 'u1', 'pay', JSON.stringify({ ...valid({ fingerprint: 'fp' }), state: 'exploded' }));
    const claim = await store.claim(intentRecord('u1', 'pay', { key: 'k-new' }));
    expect(claim.created).toBe(false);
    expect(claim.record).toMatchObject({ key: 'k-sent', state: 'unknown', fingerprint: 'fp', createdAt: 1.7e12 });
    expect(events).toEqual([expect.objectContaining({ reason: expect.stringMatching(/its key was kept/) })]);
    expect((await store.get('u1', 'pay'))?.key).toBe('k-sent');
    expect(await store.listQuarantined()).toEqual([expect.objectContaining({ salvagedKey: 'k-sent' })]);
    expect(events).toHaveLength(1);
  });

  it('get, list and sweep settle the bad rows they meet and never throw over them', async () => {
    const { file, store, events } = await setup();
    await store.claim(intentRecord('u1', 'fine', { state: 'succeeded' }));
    tamper(file, 'u1', 'pay', JSON.stringify({ ...valid(), state: 42 }), 'unknown');
    tamper(file, 'u1', 'lost', '{"truncat', 'succeeded');
    const listed = await store.list('u1');
    expect(listed.map((r) => `${r.name}:${r.state}`).sort()).toEqual(['fine:succeeded', 'pay:unknown']);
    expect(events).toHaveLength(2);
    await expect(store.claim(intentRecord('u1', 'lost'))).rejects.toBeInstanceOf(CorruptRecordError);

    tamper(file, 'u1', 'later', '', 'succeeded');
    expect(await store.sweep('u1', Number.MAX_SAFE_INTEGER)).toBe(1);
    expect(events).toHaveLength(3);
    expect((await store.list('u1')).map((r) => `${r.name}:${r.state}`)).toEqual(['pay:unknown']);
  });

  it('an updater that throws over a damaged row undoes the quarantine too, alone or in a batch', async () => {
    const { file, store, events } = await setup();
    const damaged = JSON.stringify({ ...valid(), state: 'exploded' });
    tamper(file, 'u1', 'pay', damaged);
    const failing = () => {
      throw new Error('updater failed');
    };
    await expect(store.update('u1', 'pay', failing)).rejects.toThrow('updater failed');
    const [alongside] = await Promise.allSettled([
      store.update('u1', 'pay', failing),
      store.claim(intentRecord('u1', 'other')),
    ]);
    expect(alongside.status).toBe('rejected');
    expect(events).toEqual([]);
    expect(await store.listQuarantined()).toEqual([]);
    expect((await store.get('u1', 'pay'))?.key).toBe('k-sent');
    expect(events).toHaveLength(1);
  });

  it('an update that writes over a damaged row it saw salvaged sets the row aside in its commit', async () => {
    const { file, store, events } = await setup();
    const damaged = JSON.stringify({ ...valid(), state: 'exploded' });
    tamper(file, 'u1', 'pay', damaged);
    const written = await store.update('u1', 'pay', (r) => r && { ...r, attempts: 3 });
    expect(written).toMatchObject({ key: 'k-sent', state: 'unknown', attempts: 3 });
    expect(events).toEqual([expect.objectContaining({ reason: expect.stringMatching(/its key was kept/) })]);
    expect(await store.listQuarantined('u1')).toEqual([
      expect.objectContaining({ salvagedKey: 'k-sent', value: damaged }),
    ]);
    expect(await store.get('u1', 'pay')).toMatchObject({ key: 'k-sent', attempts: 3 });
  });

  it('two stores meeting one bad row agree on the outcome', async () => {
    const { file, store, open } = await setup();
    const other = await open();
    tamper(file, 'u1', 'pay', JSON.stringify({ ...valid(), attempts: -1 }));
    const [a, b] = await Promise.all([
      store.claim(intentRecord('u1', 'pay', { key: 'k-a' })),
      other.claim(intentRecord('u1', 'pay', { key: 'k-b' })),
    ]);
    expect([a.record.key, b.record.key]).toEqual(['k-sent', 'k-sent']);
    expect(await store.listQuarantined()).toHaveLength(1);
  });
});

describe('SqliteStore default directory', () => {
  it('follows ONCELY_STATE_DIR, XDG_STATE_HOME and each OS convention', () => {
    const home = '/home/ada';
    expect(defaultStateDir({ env: { ONCELY_STATE_DIR: '/srv/state' }, platform: 'linux', home })).toBe('/srv/state');
    expect(defaultStateDir({ env: {}, platform: 'linux', home })).toBe('/home/ada/.local/state/oncely');
    expect(defaultStateDir({ env: { XDG_STATE_HOME: '/x' }, platform: 'linux', home })).toBe('/x/oncely');
    expect(defaultStateDir({ env: { XDG_STATE_HOME: 'relative' }, platform: 'linux', home })).toBe(
      '/home/ada/.local/state/oncely',
    );
    expect(defaultStateDir({ env: {}, platform: 'darwin', home: '/Users/ada' })).toBe(
      '/Users/ada/Library/Application Support/oncely',
    );
    expect(defaultStateDir({ env: { LOCALAPPDATA: 'C:\\Users\\ada\\AppData\\Local' }, platform: 'win32' })).toBe(
      'C:\\Users\\ada\\AppData\\Local\\oncely',
    );
    expect(defaultStateDir({ env: {}, platform: 'win32', home: 'C:\\Users\\ada' })).toBe(
      'C:\\Users\\ada\\AppData\\Local\\oncely',
    );
  });

  it('is where a SqliteStore without `dir` (the default store of createClient in Node) goes', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const saved = process.env.ONCELY_STATE_DIR;
    process.env.ONCELY_STATE_DIR = path.join(dir, 'state');
    try {
      const store = new SqliteStore();
      expect(store.file).toBe(path.join(dir, 'state', 'intents.db'));
      await store.claim(intentRecord('u1', 'a'));
      await store.close();
      expect(await filesUnder(dir)).toContain(path.join('state', 'intents.db'));
    } finally {
      if (saved === undefined) delete process.env.ONCELY_STATE_DIR;
      else process.env.ONCELY_STATE_DIR = saved;
    }
  });
});
