/**
 * Issue 30 §2 with real processes: a call over the SQLite store ends once its outcome write
 * is queued. A child process sends through `client.send()`; its store's disk gets stuck as
 * the answer arrives (the database thread blocks inside the outcome write's commit), the
 * call resolves anyway, and the child is killed with SIGKILL before the write lands. The
 * intent is left `in_flight` under its key; the next process resumes it, the server replays,
 * one effect.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';
import { listenContractServer } from '../node/mock-server.js';
import { openSqliteStore } from '../node/sqlite-store.js';
import { createClient } from '../src/index.js';
import { createContractServer } from '../src/mock/index.js';
import { tempStoreDir } from './fixtures/store-dirs.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const source = fileURLToPath(new URL('./fixtures/queued-outcome-child.ts', import.meta.url));

/** The child as one bundled file, its database thread's file beside it (as in dist/). */
async function bundle(dir: string): Promise<string> {
  await writeFile(path.join(dir, 'package.json'), '{"type":"module"}');
  await build({
    entryPoints: {
      child: source,
      'sqlite-worker': fileURLToPath(new URL('../node/sqlite-worker.ts', import.meta.url)),
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    outdir: dir,
    logLevel: 'warning',
  });
  return path.join(dir, 'child.js');
}

function run(file: string, args: string[]): { child: ChildProcess; line: Promise<string> } {
  const child = spawn(process.execPath, [file, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const line = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const end = out.indexOf('\n');
      if (end >= 0) resolve(out.slice(0, end));
    });
    child.once('exit', (code) => reject(new Error(`child exited (${code}) before answering: ${stderr}`)));
  });
  return { child, line };
}

describe('SqliteStore: a call ends once its outcome write is queued', () => {
  it('resolves while the outcome write is stuck on the disk; SIGKILL before it lands leaves the intent in flight; the next process gets the replay, one effect', {
    timeout: 60_000,
  }, async () => {
    const { dir, remove } = await tempStoreDir();
    const contract = createContractServer();
    const http = await listenContractServer(contract);
    cleanups.push(remove, () => http.close());
    const { child, line } = run(await bundle(dir), [path.join(dir, 'store'), http.url]);
    cleanups.push(() => child.kill('SIGKILL'));
    const sent = JSON.parse(await line) as { ms: number; key: string; status: number };
    // The call did not wait for the stuck write (it would wait out storeTimeout: 8 s).
    expect(sent.status).toBe(201);
    expect(sent.ms).toBeLessThan(4_000);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(contract.effects(sent.key)).toBe(1);

    const store = await openSqliteStore({ dir: path.join(dir, 'store') });
    cleanups.push(() => store.close());
    expect(await store.get('default', 'pay:1')).toMatchObject({ key: sent.key, state: 'in_flight' });
    const client = createClient({ baseUrl: http.url, store });
    expect(await client.pending()).toMatchObject([{ name: 'pay:1', key: sent.key, state: 'in_flight' }]);
    const again = await client.send('pay:1', 'POST', 'payments', { json: { amount: 1 } });
    expect(again).toMatchObject({ key: sent.key, status: 201, replayed: true });
    expect(contract.effects(sent.key)).toBe(1);
    expect((await store.get('default', 'pay:1'))?.state).toBe('succeeded');
    await client.close();
  });
});
