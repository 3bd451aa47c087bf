/**
 * `oncely check` against real server libraries (express-idempotency 1.0.6 with its memory
 * adapter, @node-idempotency/core 1.0.11 behind our Express adapter) and a deliberately
 * racy server, all on 127.0.0.1; then oncely with the suggested profile through a proxy
 * that drops the first answer of each intent.
 */
import { afterEach, expect, test } from 'vitest';
import { runCheck } from '../src/cli/check.js';
import { formatReport } from '../src/cli/report.js';
import { startDropProxy } from './servers/drop-proxy.js';
import { startExpressIdempotencyServer } from './servers/express-idempotency-server.js';
import type { TestServer } from './servers/listen.js';
import { startNodeIdempotencyServer } from './servers/node-idempotency-server.js';
import { oncePerIntent, severities } from './servers/once-per-intent.js';
import { startRacyServer } from './servers/racy-server.js';

const body = { amount: 1000, currency: 'EUR' };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

async function checkAndVerify(start: () => Promise<TestServer>) {
  const server = await start();
  cleanups.push(() => server.close());
  const report = await runCheck({ url: `${server.url}/payments`, json: body, slow: 'X-Slow: 200' });
  if (process.env.ONCELY_PRINT_REPORTS) console.log(formatReport(report));
  const proxy = await startDropProxy(server.url);
  cleanups.push(() => proxy.close());
  const once = await oncePerIntent({
    baseUrl: proxy.url,
    profile: report.suggestion!.profile,
    body,
    dropNext: () => {
      proxy.drop = 1;
    },
    effects: server.effects,
  });
  expect(proxy.dropped).toBe(2);
  return { report, once };
}

test('express-idempotency (memory adapter): bare verbatim key, no replay marker, 417 mismatch, loose comparison', async () => {
  const { report, once } = await checkAndVerify(startExpressIdempotencyServer);
  expect(severities(report.findings)).toEqual({
    'key-encoding': 'warn',
    replay: 'pass',
    'replay-marker': 'warn',
    'key-length': 'pass',
    mismatch: 'info',
    'key-order': 'pass',
    'number-type': 'warn',
    race: 'pass',
    'in-progress': 'info',
    'missing-key': 'warn',
    'error-answer': 'info',
    retention: 'info',
  });
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  expect(find('mismatch').result).toContain('417');
  expect(find('in-progress').result).toBe('A request in progress is a 409 without Retry-After.');
  expect(find('error-answer').result).toContain('not stored');
  expect(report.failed).toBe(false);
  expect(report.suggestion!.changes).toEqual({
    name: 'checked',
    keyEncoding: 'bare',
    replay: 'none',
    mismatchStatuses: [417],
  });
  expect(once).toMatchObject({ effects: 2, statuses: [201, 201] });
});

test('@node-idempotency/core: bare verbatim key, 422, 409 + Retry-After: 1, order-sensitive fingerprint, errors stored', async () => {
  const { report, once } = await checkAndVerify(startNodeIdempotencyServer);
  expect(severities(report.findings)).toEqual({
    'key-encoding': 'warn',
    replay: 'pass',
    'replay-marker': 'pass',
    'key-length': 'pass',
    mismatch: 'pass',
    'key-order': 'info',
    'number-type': 'pass',
    race: 'pass',
    'in-progress': 'pass',
    'missing-key': 'warn',
    'error-answer': 'info',
    retention: 'info',
  });
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  expect(find('in-progress').result).toBe('A request in progress is a 409 with Retry-After: 1.');
  expect(find('key-length').result).toBe('Keys of 256 characters are accepted; 1024 characters are not.');
  expect(find('error-answer').result).toContain('is stored');
  expect(report.failed).toBe(false);
  expect(report.suggestion!.changes).toEqual({ name: 'checked', keyEncoding: 'bare' });
  expect(once).toMatchObject({ effects: 2, statuses: [201, 201] });
});

test('a racy read-then-write key store: the check reports the duplicate effect and fails', async () => {
  const { report, once } = await checkAndVerify(startRacyServer);
  const race = report.findings.find((f) => f.id === 'race')!;
  expect(race.severity).toBe('fail');
  expect(race.result).toMatch(
    /^In 1 of \d+ rounds, 5 simultaneous first requests with one key made more than one resource: a duplicate effect\.$/,
  );
  expect(race.evidence![0]).toMatch(/^round \d: [2-5] resources \(id pay_\w+, id pay_\w+/);
  expect(race.cannot).toContain('Fix a server that races');
  expect(severities(report.findings)).toMatchObject({
    'key-encoding': 'warn',
    replay: 'pass',
    'replay-marker': 'warn',
    mismatch: 'warn',
    'in-progress': 'warn',
    'missing-key': 'pass',
  });
  expect(report.failed).toBe(true);
  expect(report.suggestion!.changes).toEqual({ name: 'checked', keyEncoding: 'bare', replay: 'none' });
  // Sequential retries are replayed even here: oncely makes one effect per intent.
  expect(once).toMatchObject({ effects: 2, statuses: [201, 201] });
});
