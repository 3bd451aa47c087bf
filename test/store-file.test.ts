import { spawnSync } from 'node:child_process';
import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileStore, openFileStore } from '../node/file-store.js';
import { recordId, scopeId } from '../node/record-file.js';
import { defaultStateDir } from '../node/state-dir.js';
import { tempName } from '../node/temp-files.js';
import { CorruptRecordError, InvalidArgumentError } from '../src/errors.js';
import type { IntentRecord, StoreEvent } from '../src/store/store.js';
import { filesUnder, recordPath, tempStoreDir } from './fixtures/store-dirs.js';
import { intentRecord, runStoreConformance } from './store-conformance.js';

runStoreConformance('FileStore', async () => {
  const { dir, remove } = await tempStoreDir();
  return { store: new FileStore({ dir }), reopen: () => openFileStore({ dir }), cleanup: remove };
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: { fsync?: boolean } = {}) {
  const { dir, remove } = await tempStoreDir();
  const events: StoreEvent[] = [];
  const open = async () => {
    const store = await openFileStore({ dir, ...options });
    store.subscribe((event) => events.push(event));
    cleanups.push(() => store.close());
    return store;
  };
  cleanups.push(remove);
  return { dir, events, store: await open(), open };
}

describe('FileStore layout', () => {
  it('keeps one JSON line per intent under hashed names, and no temp file', async () => {
    const { dir, store } = await setup();
    const record = intentRecord('u1', 'checkout:42');
    await store.claim(record);
    const file = path.join('scopes', scopeId('u1'), `${recordId('u1', 'checkout:42')}.jsonl`);
    expect(await filesUnder(dir)).toEqual([file]);
    const text = await readFile(path.join(dir, file), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(JSON.parse(text)).toEqual({ id: recordId('u1', 'checkout:42'), ...record });
  });

  it('accepts any scope or name: slashes, dots, unicode, NUL, empty, 10 kB', async () => {
    const { dir, store, open } = await setup();
    const names = [
      'a/b/c',
      '../../../etc/passwd',
      '..',
      '.',
      '',
      'C:\\Windows\\win.ini',
      'café', // NFC
      'cafe\u0301', // NFD: a different name
      '💳 checkout — חשבון',
      'nul\u0000byte',
      'x'.repeat(10_000),
    ];
    const scopes = ['tenant/../other', '💼', 'y'.repeat(10_000)];
    for (const scope of scopes) {
      for (const [i, name] of names.entries()) await store.claim(intentRecord(scope, name, { key: `k${i}` }));
    }
    const again = await open();
    for (const scope of scopes) {
      const listed = await again.list(scope);
      expect(listed.map((record) => record.name).sort()).toEqual([...names].sort());
      for (const [i, name] of names.entries()) expect((await again.get(scope, name))?.key).toBe(`k${i}`);
    }
    await again.update(scopes[0]!, names[1]!, (current) => current && { ...current, state: 'unknown' });
    expect((await again.get(scopes[0]!, names[1]!))?.state).toBe('unknown');
    await again.delete(scopes[0]!, names[1]!, 'k1');
    expect(await again.get(scopes[0]!, names[1]!)).toBeUndefined();
    // Every file stays inside the store, under fixed-length hex names.
    for (const file of await filesUnder(dir)) expect(file).toMatch(/^scopes\/[0-9a-f]{64}\/[0-9a-f]{64}\.jsonl$/);
  });

  it('commits concurrent claims together: one file linked under many names, each read back right', async () => {
    const { dir, store, open } = await setup();
    const names = Array.from({ length: 200 }, (_, i) => `job:${i}`);
    await Promise.all(names.map((name) => store.claim(intentRecord('u1', name))));
    const links = await Promise.all(names.map(async (name) => (await stat(recordPath(dir, 'u1', name))).nlink));
    expect(Math.max(...links)).toBeGreaterThan(1);
    // Updating one of them replaces only its own name.
    await store.update('u1', 'job:0', (current) => current && { ...current, state: 'succeeded' });
    const again = await open();
    const listed = await again.list('u1');
    expect(listed).toHaveLength(200);
    for (const record of listed) expect(record).toEqual(intentRecord('u1', record.name, { state: record.state }));
    expect(listed.filter((record) => record.state === 'succeeded').map((record) => record.name)).toEqual(['job:0']);
    expect((await again.get('u1', 'job:7'))?.key).toBe('key-u1-job:7');
    expect(await again.sweep('u1', Number.MAX_SAFE_INTEGER)).toBe(200);
    expect(await filesUnder(dir)).toEqual([]);
  });

  it('keeps working when another store clears the scope under it', async () => {
    const { store, open } = await setup();
    const other = await open();
    await store.claim(intentRecord('u1', 'a'));
    await other.clear('u1');
    expect((await store.claim(intentRecord('u1', 'b'))).created).toBe(true);
    await store.update('u1', 'b', (current) => current && { ...current, state: 'unknown' });
    expect(byState(await other.list('u1'))).toEqual(['b:unknown']);
  });

  it('reports an unusable directory when opened', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    await writeFile(path.join(dir, 'taken'), 'a file, not a directory');
    await expect(openFileStore({ dir: path.join(dir, 'taken') })).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(new FileStore({ dir: path.join(dir, 'taken') }).get('u1', 'a')).rejects.toThrow();
  });

  it('works without fsync', async () => {
    const { store } = await setup({ fsync: false });
    expect((await store.claim(intentRecord('u1', 'a'))).created).toBe(true);
    expect((await store.get('u1', 'a'))?.key).toBe('key-u1-a');
  });

  it('rejects records that would not read back, before writing anything', async () => {
    const { dir, store } = await setup();
    const bad = { ...intentRecord('u1', 'a'), key: '' };
    await expect(store.claim(bad)).rejects.toBeInstanceOf(InvalidArgumentError);
    await store.claim(intentRecord('u1', 'a'));
    await expect(store.update('u1', 'a', (current) => current && { ...current, name: 'b' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(await filesUnder(dir)).toHaveLength(1);
  });
});

describe('FileStore default directory', () => {
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

  it('is where a FileStore without `dir` goes', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const saved = process.env.ONCELY_STATE_DIR;
    process.env.ONCELY_STATE_DIR = path.join(dir, 'state');
    try {
      const store = new FileStore();
      expect(store.dir).toBe(path.join(dir, 'state'));
      await store.claim(intentRecord('u1', 'a'));
      expect(await filesUnder(dir)).toHaveLength(1);
    } finally {
      if (saved === undefined) delete process.env.ONCELY_STATE_DIR;
      else process.env.ONCELY_STATE_DIR = saved;
    }
  });
});

describe('FileStore opening', () => {
  it('removes temp files of dead processes and old ones, keeps live fresh ones', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const tmp = path.join(dir, 'tmp');
    await mkdir(tmp, { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const live = process.ppid;
    const files = {
      dead: `${dead}.abcdef.1.tmp`,
      liveFresh: `${live}.abcdef.2.tmp`,
      liveOld: `${live}.abcdef.3.tmp`,
      ourPidOtherRun: `${process.pid}.0123456789ab.4.tmp`,
      ourRun: tempName(),
      strangeFresh: 'notes.txt',
      strangeOld: 'old-notes.txt',
    };
    for (const name of Object.values(files)) await writeFile(path.join(tmp, name), 'partial');
    const longAgo = new Date(Date.now() - 5 * 60_000);
    await utimes(path.join(tmp, files.liveOld), longAgo, longAgo);
    await utimes(path.join(tmp, files.strangeOld), longAgo, longAgo);
    const store = await openFileStore({ dir });
    cleanups.push(() => store.close());
    expect(await filesUnder(tmp)).toEqual([files.liveFresh, files.ourRun, files.strangeFresh].sort());
  });

  it('does not read records: files it cannot parse stay unseen until their intent is used', async () => {
    const { dir, events, store, open } = await setup();
    await store.claim(intentRecord('u1', 'fine'));
    const scopeDir = path.join(dir, 'scopes', scopeId('u1'));
    for (let i = 0; i < 2000; i++) await writeFile(path.join(scopeDir, `${recordId('u1', `bad-${i}`)}.jsonl`), 'x');
    const again = await open();
    expect((await again.get('u1', 'fine'))?.key).toBe('key-u1-fine');
    expect((await again.claim(intentRecord('u2', 'other'))).created).toBe(true);
    expect(events).toEqual([]);
    await expect(again.get('u1', 'bad-7')).rejects.toBeInstanceOf(CorruptRecordError);
    expect(events).toHaveLength(1);
  });
});

describe('FileStore quarantine', () => {
  async function withFile(content: string, name = 'pay') {
    const context = await setup();
    const file = recordPath(context.dir, 'u1', name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content);
    return { ...context, file };
  }

  const valid = (extra: Partial<IntentRecord> = {}) => intentRecord('u1', 'pay', { key: 'k-sent', ...extra });
  const line = (value: object) => `${JSON.stringify({ id: recordId('u1', 'pay'), ...value })}\n`;

  for (const [label, content] of [
    ['garbage', 'garbage\u0000\u00ff'],
    ['an empty file', ''],
    ['a truncated record', line(valid()).slice(0, 60)],
    ['a record of another intent', line(intentRecord('u1', 'other', { key: 'k-other' }))],
    ['a record with a numeric key', line({ ...valid(), key: 42 })],
    ['a foreign JSON file', '{"hello": "world"}'],
  ] as const) {
    it(`${label}: claim throws CorruptRecordError and never mints a key until the intent is deleted`, async () => {
      const { dir, file, store, events, open } = await withFile(content);
      const error = await store.claim(intentRecord('u1', 'pay', { key: 'k-new' })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptRecordError);
      expect(error).toMatchObject({ code: 'CORRUPT_RECORD', scope: 'u1', intent: 'pay' });
      expect(events).toEqual([
        {
          type: 'quarantine',
          reason: expect.stringMatching(/no usable key/),
          location: (error as CorruptRecordError).location,
          scope: 'u1',
          name: 'pay',
        },
      ]);
      const { location } = error as CorruptRecordError;
      expect(location.startsWith(path.join(dir, 'quarantine', scopeId('u1')))).toBe(true);
      expect(await readFile(location, 'latin1')).toBe(Buffer.from(content).toString('latin1'));

      // Blocked on every path and after a restart, with no second report.
      await expect(store.claim(intentRecord('u1', 'pay', { key: 'k-newer' }))).rejects.toBeInstanceOf(
        CorruptRecordError,
      );
      await expect(store.get('u1', 'pay')).rejects.toBeInstanceOf(CorruptRecordError);
      await expect(store.update('u1', 'pay', (r) => r)).rejects.toBeInstanceOf(CorruptRecordError);
      expect(await store.list('u1')).toEqual([]);
      await store.delete('u1', 'pay', 'k-new');
      const restarted = await open();
      await expect(restarted.claim(intentRecord('u1', 'pay'))).rejects.toBeInstanceOf(CorruptRecordError);
      expect(events).toHaveLength(1);
      expect(await restarted.listQuarantined('u1')).toEqual([
        expect.objectContaining({ location, scope: 'u1', name: 'pay' }),
      ]);

      // The app reconciled and forms the intent afresh.
      await store.delete('u1', 'pay');
      expect(await store.claim(intentRecord('u1', 'pay', { key: 'k-new' }))).toMatchObject({
        created: true,
        record: { key: 'k-new' },
      });
      expect((await readFile(file, 'utf8')).includes('k-new')).toBe(true);
      await store.clear('u1');
      expect(await store.listQuarantined('u1')).toEqual([]);
    });
  }

  it('a damaged record whose key is readable keeps the key, as unknown', async () => {
    const { store, events } = await withFile(line({ ...valid({ fingerprint: 'fp' }), state: 'exploded' }));
    const claim = await store.claim(intentRecord('u1', 'pay', { key: 'k-new' }));
    expect(claim.created).toBe(false);
    expect(claim.record).toMatchObject({ key: 'k-sent', state: 'unknown', fingerprint: 'fp', createdAt: 1.7e12 });
    expect(events).toEqual([expect.objectContaining({ reason: expect.stringMatching(/its key was kept/) })]);
    expect((await store.get('u1', 'pay'))?.key).toBe('k-sent');
    expect(await store.listQuarantined()).toEqual([expect.objectContaining({ salvagedKey: 'k-sent' })]);
    expect(events).toHaveLength(1);
  });

  it('list and sweep settle the bad files they meet and never throw', async () => {
    const { dir, store, events } = await withFile(line({ ...valid(), state: 42 }));
    await store.claim(intentRecord('u1', 'fine', { state: 'succeeded' }));
    await writeFile(recordPath(dir, 'u1', 'lost'), '{"truncat');
    await writeFile(recordPath(dir, 'u1', 'other'), line(intentRecord('u1', 'pay')));
    const listed = await store.list('u1');
    expect(listed.map((r) => `${r.name}:${r.state}`).sort()).toEqual(['fine:succeeded', 'pay:unknown']);
    expect(events).toHaveLength(3);
    expect(events.filter((e) => e.type === 'quarantine' && e.name === undefined)).toHaveLength(2);
    await expect(store.claim(intentRecord('u1', 'lost'))).rejects.toBeInstanceOf(CorruptRecordError);

    await writeFile(recordPath(dir, 'u1', 'later'), '');
    expect(await store.sweep('u1', Number.MAX_SAFE_INTEGER)).toBe(1);
    expect(events).toHaveLength(4);
    expect(byState(await store.list('u1'))).toEqual(['pay:unknown']);
  });

  it('two stores meeting one bad file agree on the outcome', async () => {
    const { store, open, events } = await withFile(line({ ...valid(), attempts: -1 }));
    const other = await open();
    const [a, b] = await Promise.all([
      store.claim(intentRecord('u1', 'pay', { key: 'k-a' })),
      other.claim(intentRecord('u1', 'pay', { key: 'k-b' })),
    ]);
    expect([a.record.key, b.record.key]).toEqual(['k-sent', 'k-sent']);
    expect(events.length).toBeGreaterThanOrEqual(1);
  });
});

const byState = (records: IntentRecord[]) => records.map((r) => `${r.name}:${r.state}`).sort();
