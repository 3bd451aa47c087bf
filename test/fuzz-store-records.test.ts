/**
 * Corrupted and truncated store records (SqliteStore rows; IndexedDB values through
 * fake-indexeddb). The intent that was sent and whose outcome is unknown is the one
 * that matters: a lost key would be a new key and a second effect. Whatever the damage,
 * a restarted client either keeps the key it sent (salvaged) or refuses with
 * `CorruptRecordError` (nothing sent, no key minted); errors are typed; other intents
 * are untouched; the store keeps working.
 */
import 'fake-indexeddb/auto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { IDBFactory } from 'fake-indexeddb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdbStore } from '../browser/idb-store.js';
import { SqliteStore } from '../node/sqlite-store.js';
import { CorruptRecordError, createClient, OncelyError, type Store } from '../src/index.js';
import { type ContractServer, createContractServer } from '../src/mock/index.js';
import { settled } from './chaos/harness.js';
import { chaosParameters, chaosTimeout } from './chaos/runs.js';
import { drive, useVirtualTime } from './chaos/virtual-time.js';

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => {
  restore();
  console.log(`fuzz-store-records: ${tried.records} damaged records tried`);
});

const tried = { records: 0 };

const SCOPE = 'u1';
const body = (name: string) => ({ intent: name, amount: 100 });

/** Sends `pay` (dropped after commit: unknown, one effect) and `other` (succeeded) over `store`. */
async function sendBoth(store: Store, contract: ContractServer) {
  const client = createClient({
    baseUrl: 'https://api.test/',
    scope: SCOPE,
    store,
    fetch: contract.fetch as typeof fetch,
    now: () => Date.now(),
    retry: { maxAttempts: 1 },
  });
  const pay = await drive(client.intent('pay'));
  contract.inject({ fault: 'drop-after-commit' });
  await drive(settled(pay.post('payments', { json: body('pay') })));
  expect(pay.state).toBe('unknown');
  const other = await drive(client.intent('other'));
  await drive(other.post('payments', { json: body('other') }));
  return { payKey: pay.key, otherKey: other.key };
}

/** A restart over the damaged store: pending(), then each intent re-issued. Nothing here may throw untyped. */
async function restartAndResume(store: Store, contract: ContractServer, keys: { payKey: string; otherKey: string }) {
  const client = createClient({
    baseUrl: 'https://api.test/',
    scope: SCOPE,
    store,
    fetch: contract.fetch as typeof fetch,
    now: () => Date.now(),
    retry: { maxAttempts: 2 },
  });
  const pending = await drive(settled(client.pending()));
  if (!pending.ok) expect(pending.error).toBeInstanceOf(OncelyError);
  const formed = await drive(settled(client.intent('pay')));
  if (formed.ok) {
    // Salvaged or intact: the key that was sent, never a new one.
    expect(formed.value.key, 'the intent got another key').toBe(keys.payKey);
    const sent = await drive(settled(formed.value.post('payments', { json: body('pay') })));
    // Typed: IntentExpiredError when the salvaged key's age is unknown (createdAt 0), and so on.
    if (!sent.ok) expect(sent.error, String(sent.error)).toBeInstanceOf(OncelyError);
  } else {
    expect(formed.error, String(formed.error)).toBeInstanceOf(CorruptRecordError);
  }
  // The other intent is untouched.
  expect((await drive(client.intent('other'))).key).toBe(keys.otherKey);
  // Every `pay` request on the wire carried the one key; one effect at most.
  const payKeys = new Set(contract.requests.filter((r) => r.key !== keys.otherKey).map((r) => r.key));
  expect([...payKeys]).toEqual([keys.payKey]);
  expect(contract.effects(keys.payKey)).toBe(1);
  expect(contract.effects()).toBe(2);
  // The store keeps working.
  await drive(store.list(SCOPE));
  await drive(store.sweep(SCOPE, Number.MAX_SAFE_INTEGER));
}

/** How to damage a stored line (its JSON text). */
type Damage =
  | { kind: 'truncate'; at: number }
  | { kind: 'zeros' }
  | { kind: 'empty' }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'flip'; at: number; byte: number }
  | { kind: 'field'; field: string; value: unknown }
  | { kind: 'drop-field'; field: string }
  | { kind: 'append'; text: string }
  | { kind: 'other-intent' };

const FIELDS = [
  'v',
  'scope',
  'name',
  'key',
  'state',
  'fingerprint',
  'attempts',
  'createdAt',
  'updatedAt',
  'status',
  'id',
];

/** A value that is not a usable key: a key changed into another valid key cannot be detected (see the known gap). */
const notAKey = (field: string, value: unknown) =>
  field !== 'key' ||
  typeof value !== 'string' ||
  value.length === 0 ||
  value.length > 255 ||
  !/^[\x20-\x7e]+$/.test(value);

const damageArb: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.constant({ kind: 'zeros' as const }),
  fc.constant({ kind: 'empty' as const }),
  fc.record({ kind: fc.constant('bytes' as const), bytes: fc.uint8Array({ maxLength: 300 }) }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc
    .record({
      kind: fc.constant('field' as const),
      field: fc.constantFrom(...FIELDS),
      value: fc.oneof(fc.jsonValue(), fc.constantFrom(-1, 1e300, '', 'unknown', 'pay', 'other', 'u1', 'x'.repeat(300))),
    })
    .filter((d) => notAKey(d.field, d.value)),
  fc.record({ kind: fc.constant('drop-field' as const), field: fc.constantFrom(...FIELDS) }),
  fc.record({ kind: fc.constant('append' as const), text: fc.string({ maxLength: 200 }) }),
  fc.constant({ kind: 'other-intent' as const }),
);

/** The span of the key's characters in the text, which a flip must avoid (see the known gap below). */
const keySpan = (text: string, key: string): [number, number] => {
  const at = text.indexOf(`"key":"${key}"`);
  return at < 0 ? [0, 0] : [at, at + key.length + 8];
};

function damage(text: string, how: Damage, key: string, otherText: string): string | Uint8Array {
  switch (how.kind) {
    case 'truncate':
      return text.slice(0, how.at % Math.max(1, text.length));
    case 'zeros':
      return '\0'.repeat(text.length);
    case 'empty':
      return '';
    case 'bytes':
      return how.bytes;
    case 'flip': {
      const [from, to] = keySpan(text, key);
      let at = how.at % text.length;
      if (at >= from && at < to) at = (to + (at - from)) % text.length;
      if (at >= from && at < to) return text;
      const bytes = Buffer.from(text);
      bytes[at] = how.byte;
      return bytes;
    }
    case 'field':
    case 'drop-field': {
      const value = JSON.parse(text.split('\n')[0]!) as Record<string, unknown>;
      if (how.kind === 'field') value[how.field] = how.value;
      else delete value[how.field];
      return JSON.stringify(value);
    }
    case 'append':
      return `${text}\n${how.text}`;
    case 'other-intent':
      return otherText;
  }
}

/** The stored JSON of an intent, as it is in the database file. */
function readRow(dir: string, name: string): string {
  const db = new DatabaseSync(path.join(dir, 'intents.db'));
  try {
    const row = db.prepare('SELECT record FROM intents WHERE scope = ? AND name = ?').get(SCOPE, name);
    if (!row) throw new Error(`no row of ${name}`);
    return String(row.record);
  } finally {
    db.close();
  }
}

/** Overwrites an intent's stored JSON behind the store's back, as damage would. */
function writeRow(dir: string, name: string, data: string | Uint8Array) {
  const db = new DatabaseSync(path.join(dir, 'intents.db'));
  const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
  db.prepare('UPDATE intents SET record = ? WHERE scope = ? AND name = ?').run(text, SCOPE, name);
  db.close();
}

describe('SqliteStore: damaged rows', () => {
  it('a restarted client keeps the sent key or refuses with CorruptRecordError; never a new key', {
    timeout: chaosTimeout(120_000),
  }, async () => {
    await fc.assert(
      fc.asyncProperty(damageArb, async (how) => {
        tried.records++;
        const dir = await mkdtemp(path.join(tmpdir(), 'oncely-damage-'));
        try {
          const contract = createContractServer({ now: () => Date.now() });
          const first = new SqliteStore({ dir, fsync: false });
          const keys = await sendBoth(first, contract);
          await first.close();
          writeRow(dir, 'pay', damage(readRow(dir, 'pay'), how, keys.payKey, readRow(dir, 'other')));
          const store = new SqliteStore({ dir, fsync: false });
          await restartAndResume(store, contract, keys).finally(() => store.close());
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      }),
      chaosParameters(200, 0.01),
    );
  });

  it('fixed cases: half a line, zero-filled, empty, another intent, a foreign JSON file', async () => {
    // [label, damage, quarantined?]: a record that is still valid (a future createdAt) is not moved aside.
    const cases: [string, (text: string, other: string) => string, boolean][] = [
      ['half a line', (t) => t.slice(0, Math.floor(t.length / 2)), true],
      ['cut before the key ends', (t) => t.slice(0, t.indexOf('"key":') + 12), true],
      ['zero-filled', (t) => '\0'.repeat(t.length), true],
      ['empty', () => '', true],
      ['a line of another intent', (_t, o) => o, true],
      ['foreign JSON', () => '{"hello":"world"}', true],
      ['state garbage, key intact', (t) => t.replace(/"state":"[a-z_]+"/, '"state":"exploded"'), true],
      ['createdAt in the future', (t) => t.replace(/"createdAt":\d+/, '"createdAt":99999999999999'), false],
    ];
    for (const [label, damageText, quarantined] of cases) {
      tried.records++;
      const dir = await mkdtemp(path.join(tmpdir(), 'oncely-damage-'));
      try {
        const contract = createContractServer({ now: () => Date.now() });
        const first = new SqliteStore({ dir, fsync: false });
        const keys = await sendBoth(first, contract);
        await first.close();
        writeRow(dir, 'pay', damageText(readRow(dir, 'pay'), readRow(dir, 'other')));
        const store = new SqliteStore({ dir, fsync: false });
        await restartAndResume(store, contract, keys).catch((error: unknown) => {
          throw new Error(`${label}: ${String(error)}`);
        });
        expect((await store.listQuarantined(SCOPE)).length > 0, label).toBe(quarantined);
        await store.close();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  });
});

describe('IdbStore (fake-indexeddb): damaged values', () => {
  async function writeRaw(factory: IDBFactory, key: IDBValidKey, value: unknown): Promise<void> {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = factory.open('oncely');
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    await new Promise<void>((resolve, reject) => {
      const tx = db.transaction('intents', 'readwrite');
      tx.objectStore('intents').put(value, key);
      tx.oncomplete = () => resolve();
      tx.onabort = () => reject(tx.error);
    });
    db.close();
  }

  const valueArb = (record: Record<string, unknown>) =>
    fc.oneof(
      fc.jsonValue(),
      fc.constantFrom(null, '', 0, [], {}, { oncely: 'quarantined' }, { oncely: 'quarantined', location: 5 }),
      fc
        .record({ field: fc.constantFrom(...FIELDS.filter((f) => f !== 'id')), value: fc.jsonValue() })
        .filter(({ field, value }) => notAKey(field, value))
        .map(({ field, value }) => ({ ...record, [field]: value })),
      fc.constantFrom(...FIELDS).map((field) => {
        const copy = { ...record };
        delete copy[field];
        return copy;
      }),
      fc.constant({ ...record, name: 'other' }),
      fc.constant({ ...record, scope: 'u2' }),
      fc.constant({ ...record, key: '' }),
    );

  it('a restarted tab keeps the sent key or refuses with CorruptRecordError; never a new key', {
    timeout: chaosTimeout(120_000),
  }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        tried.records++;
        const factory = new IDBFactory();
        const contract = createContractServer({ now: () => Date.now() });
        const first = new IdbStore({ indexedDB: factory, now: () => Date.now() });
        const keys = await sendBoth(first, contract);
        const record = (await drive(first.get(SCOPE, 'pay'))) as unknown as Record<string, unknown>;
        await drive(first.close());
        const [value] = fc.sample(valueArb(record), { numRuns: 1, seed });
        await drive(writeRaw(factory, [SCOPE, 'pay'], value));
        const store = new IdbStore({ indexedDB: factory, now: () => Date.now() });
        try {
          await restartAndResume(store, contract, keys);
        } finally {
          await drive(store.close());
        }
      }),
      chaosParameters(200, 0.01),
    );
  });
});

describe('known gap: a damaged record that is still valid', () => {
  // Not fixed (SqliteStore / IdbStore design): records carry no checksum, so a key altered
  // into another well-formed key (a bit flip inside it, a bad write by another program)
  // is indistinguishable from the real one, and the next resume sends a key the server
  // never saw: a second effect. A per-record checksum (e.g. CRC-32 of the line) would
  // let the store quarantine it and keep the intent blocked. This test fails today and
  // is marked so; when the gap closes, drop `.fails`.
  it.fails('SqliteStore: a key changed by one character is detected, not sent', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'oncely-damage-'));
    try {
      const contract = createContractServer({ now: () => Date.now() });
      const first = new SqliteStore({ dir, fsync: false });
      const keys = await sendBoth(first, contract);
      await first.close();
      const last = keys.payKey.at(-1) === '0' ? '1' : '0';
      writeRow(dir, 'pay', readRow(dir, 'pay').replace(keys.payKey, `${keys.payKey.slice(0, -1)}${last}`));
      const store = new SqliteStore({ dir, fsync: false });
      await restartAndResume(store, contract, keys).finally(() => store.close());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
