/**
 * `oncely check` (default `ietf` profile) against the demo server (`npm run demo:server`:
 * Express on oncely/server), over SqliteKeyStore and over PostgresKeyStore (a throwaway
 * cluster): PASSED, no profile change, no warning; with `--slow` and `--origin` the 409 and
 * CORS are measured too. Afterwards, in the app's own ledger: one payment per key.
 * The demo runs as a child, bundled from its source with `oncely/*` mapped to this tree.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type CheckReport, runCheck } from '../src/cli/check.js';
import { formatReport } from '../src/cli/report.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { bundleChild, SOURCES } from './helpers/bundle-child.js';
import { useTestDatabase } from './postgres/database.js';

const repo = fileURLToPath(new URL('..', import.meta.url));
// Inside the repo, so that the external `express` and `pg` resolve from node_modules.
const bundle = path.join(repo, '.tmp', `demo-server-${process.pid}.mjs`);
let dir = '';
let remove = async () => {};
beforeAll(async () => {
  ({ dir, remove } = await tempStoreDir());
  await bundleChild(path.join(repo, 'demo/server.ts'), bundle, ['express', 'pg'], SOURCES);
});
afterAll(async () => {
  await rm(bundle, { force: true });
  await remove();
});

const db = useTestDatabase();

let demo: ChildProcessWithoutNullStreams | undefined;
afterEach(async () => {
  if (!demo) return;
  const exited = new Promise((resolve) => demo!.once('close', resolve));
  demo.kill('SIGTERM');
  await exited;
  demo = undefined;
});

/** Starts the demo server; resolves with its first line's URL. */
function startDemo(args: string[]): Promise<string> {
  demo = spawn(process.execPath, [bundle, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    demo!.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
    });
    demo!.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const first = out.split('\n');
      if (first.length < 2) return;
      const match = /^URL (http:\/\/127\.0\.0\.1:\d+)$/.exec(first[0]!);
      if (match) resolve(match[1]!);
      else reject(new Error(`the demo's first line is not "URL http://127.0.0.1:<port>": ${first[0]}`));
    });
    demo!.once('close', (code) => reject(new Error(`the demo exited (${code}): ${err}`)));
  });
}

const BODY = { amount: 1000, currency: 'EUR' };

function expectNothingToChange(report: CheckReport, measured: { slow: boolean; origin: boolean }) {
  if (process.env.ONCELY_PRINT_REPORTS) console.log(formatReport(report));
  const severity = Object.fromEntries(report.findings.map((f) => [f.id, f.severity]));
  expect(severity).toEqual({
    'key-encoding': 'pass',
    replay: 'pass',
    'replay-marker': 'pass',
    'key-length': 'pass',
    mismatch: 'pass',
    'key-order': 'pass',
    'number-type': 'pass',
    race: 'pass',
    // Without --slow the handler holds the key for the demo's 25 ms of I/O: the burst overlaps.
    'in-progress': measured.slow ? 'pass' : expect.stringMatching(/^(pass|info)$/),
    'missing-key': 'pass',
    'error-answer': 'info',
    ...(measured.origin ? { cors: 'pass' } : {}),
    retention: 'info',
  });
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  if (measured.slow) expect(find('in-progress').result).toBe('A request in progress is a 409 with Retry-After: 1.');
  expect(find('key-encoding').result).toBe('Only the quoted Structured Field key is accepted.');
  expect(report.failed).toBe(false);
  expect(report.suggestion!.base).toBe('ietf');
  expect(report.suggestion!.changes).toEqual({ name: 'checked' });
}

const runs = [
  { name: 'as a user runs it', options: {}, measured: { slow: false, origin: false } },
  {
    name: 'with --slow and --origin',
    options: { slow: 'X-Slow: 300', origin: 'https://shop.example' },
    measured: { slow: true, origin: true },
  },
] as const;

describe('oncely check against npm run demo:server (SQLite)', () => {
  for (const run of runs)
    it(`${run.name}: PASSED, the ietf profile with no changes; one ledger row per key`, async () => {
      const file = path.join(dir, `shop-${run.measured.slow ? 'slow' : 'plain'}.db`);
      const url = await startDemo(['--file', file]);
      const report = await runCheck({ url: `${url}/payments`, json: BODY, ...run.options });
      expectNothingToChange(report, run.measured);
      const look = new DatabaseSync(file, { readOnly: true });
      const ledger = look.prepare('SELECT count(*) AS n, count(DISTINCT key) AS keys FROM ledger').get()!;
      const unkeyed = look
        .prepare(
          'SELECT count(*) AS n FROM ledger l WHERE NOT EXISTS (SELECT 1 FROM oncely_server_keys k WHERE k.key = l.key)',
        )
        .get()!;
      look.close();
      expect(Number(ledger.n)).toBeGreaterThan(5);
      expect(ledger.n).toBe(ledger.keys);
      expect(unkeyed.n).toBe(0);
    });
});

describe('oncely check against the same app over PostgresKeyStore', () => {
  for (const run of runs)
    it(`${run.name}: PASSED, the ietf profile with no changes; one ledger row per key`, async () => {
      await db.admin.query('DROP TABLE IF EXISTS ledger');
      const { host, port, user, database } = db.cluster;
      const connection = `postgresql://${user}@localhost/${database}?host=${encodeURIComponent(host)}&port=${port}`;
      const url = await startDemo(['--postgres', connection]);
      const report = await runCheck({ url: `${url}/payments`, json: BODY, ...run.options });
      expectNothingToChange(report, run.measured);
      const { rows } = await db.admin.query(
        `SELECT count(*)::int AS n, count(DISTINCT key)::int AS keys,
                count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM oncely_server_keys k WHERE k.key = l.key))::int AS unkeyed
           FROM ledger l`,
      );
      expect(rows[0].n).toBeGreaterThan(5);
      expect(rows[0].n).toBe(rows[0].keys);
      expect(rows[0].unkeyed).toBe(0);
    });
});
