import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../node/sqlite-store.js';
import type { IntentState, StoreEvent } from '../src/store/store.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { type LineChild, LineChildren } from './helpers/line-child.js';

const source = fileURLToPath(new URL('./fixtures/store-worker.ts', import.meta.url));

// The worker runs as one bundled file: a child then starts in a fraction of the CPU time
// that loading the TypeScript sources one by one takes, which matters at 100+ children.
let worker = '';
let removeBundle = async () => {};
beforeAll(async () => {
  const { dir, remove } = await tempStoreDir();
  worker = path.join(dir, 'store-worker.js');
  removeBundle = remove;
  // The store's database thread runs its own file, found next to the bundle (as in dist/).
  await writeFile(path.join(dir, 'package.json'), '{"type":"module"}');
  await build({
    entryPoints: {
      'store-worker': source,
      'sqlite-worker': fileURLToPath(new URL('../node/sqlite-worker.ts', import.meta.url)),
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    outdir: dir,
    logLevel: 'warning',
  });
});
afterAll(() => removeBundle());

const spawned = new LineChildren();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await spawned.killAll();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The store worker with `args`, killed after the test if still running. */
const start = (args: string[]): LineChild => spawned.start(worker, args);
/** A line equal to `text` (not merely starting with it). */
const exactly = (text: string) => (line: string) => line === text;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with the child's `n`th line (from 0) once it has printed it; rejects if it exits first. */
async function line(child: LineChild, n: number): Promise<string> {
  let exited = false;
  void child.exited.then(() => {
    exited = true;
  });
  while (child.lines.length <= n) {
    if (exited) throw new Error(`worker exited after ${child.lines.length} lines`);
    await sleep(10);
  }
  return child.lines[n]!;
}

describe('SqliteStore across processes', () => {
  it('8 processes claiming one intent at once, each with its own key, all get one key', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    for (let round = 0; round < 3; round++) {
      const children = Array.from({ length: 8 }, (_, i) =>
        start(['race', dir, 'pool', `job:${round}`, `key-${round}-${i}`]),
      );
      await Promise.all(children.map((child) => child.waitFor(exactly('ready'))));
      for (const child of children) child.proc.stdin.write('go\n');
      await Promise.all(children.map((child) => child.exited));
      const results = children.map((child) => {
        // A child that failed its claim exits without its result line: say so, not "undefined is not valid JSON".
        expect(
          child.lines,
          `round ${round}: a child ended without its claim's result: ${child.describe()}`,
        ).toHaveLength(2);
        return JSON.parse(child.lines[1]!) as { key: string; created: boolean };
      });
      expect(new Set(results.map((result) => result.key)).size).toBe(1);
      expect(results.filter((result) => result.created)).toHaveLength(1);
      const store = await openSqliteStore({ dir });
      expect((await store.get('pool', `job:${round}`))?.key).toBe(results[0]!.key);
      await store.close();
    }
    // 24 process starts, 4-5 s on a quiet machine, 14-22 s beside two other test files: the bound is for a hang.
  }, 90_000);

  it('updates are atomic across processes: 6 processes × 50 increments of one record lose none', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const store = await openSqliteStore({ dir });
    await store.claim({
      v: 1,
      scope: 'pool',
      name: 'n',
      key: 'k',
      state: 'ready',
      attempts: 0,
      createdAt: 1,
      updatedAt: 1,
    });
    const children = Array.from({ length: 6 }, () => start(['count', dir, 'pool', 'n', '50']));
    await Promise.all(children.map((child) => child.waitFor(exactly('ready'))));
    for (const child of children) child.proc.stdin.write('go\n');
    await Promise.all(children.map((child) => child.waitFor(exactly('done'))));
    expect((await store.get('pool', 'n'))?.attempts).toBe(300);
    await store.close();
  }, 60_000);

  it('6 processes × 10 claims on one file: every claim resolves and the WAL stays within a few MB', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    // Open throughout: the WAL outlives the children, as it does under a long-running process.
    const store = await openSqliteStore({ dir });
    const children = Array.from({ length: 6 }, (_, i) => start(['claims', dir, 'pool', `p${i}`, '10']));
    await Promise.all(children.map((child) => child.waitFor(exactly('ready'))));
    for (const child of children) child.proc.stdin.write('go\n');
    const results = await Promise.all(
      children.map(async (child) => JSON.parse(await line(child, 1)) as { ms: number[] }),
    );
    // Each process used to add a chunk whenever another had written past its own last one: 27–57 MB.
    const wal = (await stat(path.join(dir, 'intents.db-wal'))).size;
    // One run of zeros ahead of the frames, shared by all: the frames here are well under 1 MB.
    expect(wal).toBeGreaterThanOrEqual(1 << 20);
    expect(wal).toBeLessThan(4 << 20);
    expect(results.flatMap((result) => result.ms)).toHaveLength(60);
    expect(await store.list('pool')).toHaveLength(60);
    for (const child of children) child.proc.stdin.write('go\n');
    await Promise.all(children.map((child) => child.exited));
    expect(await store.integrityCheck()).toEqual(['ok']);
    await store.close();
  }, 60_000);

  it('survives 120 SIGKILLs at random points: every resolved claim and update is there, whole', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const lanes = 4;
    const killsPerLane = 30;
    const claimed = new Map<string, string>(); // name → key printed by a resolved claim
    const reached = new Map<string, IntentState>(); // name → last state printed by a resolved update
    const order: IntentState[] = ['ready', 'in_flight', 'succeeded'];
    const conflicts: string[] = [];
    /** Children that ended before their SIGKILL: a claim or an update threw. */
    const crashed: string[] = [];
    let kills = 0;

    const lane = async (laneNo: number) => {
      for (let run = 0; run < killsPerLane; run++) {
        const child = start(['churn', dir, 'jobs', `w${laneNo}r${run}`, '3']);
        // Most kills land during claims and updates; some while the store opens.
        if (run % 6 !== 0) await child.waitFor(exactly('ready')).catch(() => {});
        await sleep(Math.random() * (run % 6 === 0 ? 150 : 60));
        child.proc.kill('SIGKILL');
        await child.exited;
        if (child.proc.signalCode !== 'SIGKILL') crashed.push(`w${laneNo}r${run}: ${child.describe()}`);
        kills++;
        for (const line of child.lines) {
          const [kind, name, value] = line.split(' ');
          if (kind === 'C') {
            const known = claimed.get(name!);
            if (known !== undefined && known !== value) conflicts.push(`${name}: ${known} vs ${value}`);
            claimed.set(name!, value!);
          } else if (kind === 'U') {
            const state = value as IntentState;
            if (order.indexOf(state) > order.indexOf(reached.get(name!) ?? 'ready')) reached.set(name!, state);
          }
        }
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: lanes }, (_, i) => lane(i)));
    const seen = `${kills} kills in ${Math.round(performance.now() - started)} ms, ${claimed.size} claims and ${reached.size} updates seen`;
    expect(kills).toBeGreaterThanOrEqual(100);
    expect(crashed, seen).toEqual([]);
    expect(conflicts, seen).toEqual([]);
    // The kills landed while work was going on (how much depends on the machine's load).
    expect(claimed.size, seen).toBeGreaterThanOrEqual(50);
    expect(reached.size, seen).toBeGreaterThanOrEqual(20);

    const events: StoreEvent[] = [];
    const store = await openSqliteStore({ dir });
    store.subscribe((event) => events.push(event));
    expect(await store.integrityCheck()).toEqual(['ok']);
    const records = new Map((await store.list('jobs')).map((record) => [record.name, record]));
    for (const [name, key] of claimed) {
      const record = records.get(name);
      expect(record?.key, name).toBe(key);
      const at = order.indexOf(reached.get(name) ?? 'ready');
      if (!name.startsWith('shared-')) expect(order.indexOf(record!.state), name).toBeGreaterThanOrEqual(at);
    }
    expect(events).toEqual([]);
    expect(await store.listQuarantined()).toEqual([]);
    await store.close();
    // 120 process starts, each a node process and its database thread (about 0.2 s of CPU):
    // 18-25 s on a quiet 2-core machine, over 60 s beside two other test files. The bound is for a hang.
  }, 240_000);
});
