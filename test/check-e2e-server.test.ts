/**
 * `oncely check` against the e2e payments API (Express on `oncely/server` over the
 * SqliteKeyStore: key, charge and stored answer in one transaction), slowed through its own
 * control endpoint; then oncely with the suggested profile under its own `drop` fault.
 */
import { afterEach, expect, test } from 'vitest';
import { type ApiServer, startApiServer } from '../e2e/server/api-server.ts';
import { runCheck } from '../src/cli/check.js';
import { formatReport } from '../src/cli/report.js';
import { oncePerIntent, severities } from './servers/once-per-intent.js';

let api: ApiServer | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

const control = async (body: object) => {
  const res = await fetch(`${api!.url}/__control`, { method: 'POST', body: JSON.stringify(body) });
  expect(res.status).toBe(200);
};

test('the e2e payments server speaks ietf: no changes, nothing that can repeat an effect', async () => {
  api = await startApiServer();
  await control({ delay: 100 });
  const body = { amount: 1000, currency: 'EUR' };
  const report = await runCheck({ url: `${api.url}/payments`, json: body, origin: 'https://shop.example' });
  if (process.env.ONCELY_PRINT_REPORTS) console.log(formatReport(report));
  expect(severities(report.findings)).toEqual({
    'key-encoding': 'pass',
    replay: 'pass',
    'replay-marker': 'pass',
    'key-length': 'pass',
    mismatch: 'pass',
    'key-order': 'pass',
    'number-type': 'pass',
    race: 'pass',
    'in-progress': 'pass',
    'missing-key': 'pass',
    'error-answer': 'info',
    cors: 'pass',
    retention: 'info',
  });
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  expect(find('key-encoding').result).toBe('Quoted and bare keys are accepted and are the same key.');
  // The handler's 400 (an invalid payment) is an answer like any other: stored, replayed.
  expect(find('error-answer').result).toBe('A 400 is stored: the key stays bound to it.');
  expect(report.failed).toBe(false);
  expect(report.suggestion!.changes).toEqual({ name: 'checked' });

  await control({ delay: 0 });
  const charges = () => api!.charges().length;
  const once = await oncePerIntent({
    baseUrl: api.url,
    profile: report.suggestion!.profile,
    body,
    dropNext: () => control({ drop: 1 }),
    effects: charges,
  });
  expect(once).toEqual({ effects: 2, statuses: [201, 201], attempts: [2, 2] });
});
