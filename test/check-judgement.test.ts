/**
 * `oncely check` judges only what it measured, against real servers on 127.0.0.1: a server
 * that refuses every repeat of a key (422 is the mismatch, never "in progress"; no replay,
 * so no replay findings), the verdict above the profile, and form-encoded bodies.
 */
import { afterEach, expect, test } from 'vitest';
import { listenContractServer } from '../node/mock-server.js';
import { runCheck } from '../src/cli/check.js';
import { cli } from '../src/cli/cli.js';
import { createClient, MemoryStore } from '../src/index.js';
import { createContractServer } from '../src/mock/index.js';
import { startExpressFormServer } from './check/express-form-server.js';
import { startRacyWindowServer } from './check/racy-window-server.js';
import { startRefuseRepeatsServer } from './check/refuse-repeats-server.js';
import { severities } from './servers/once-per-intent.js';

const body = { amount: 1000, currency: 'EUR' };
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function run(...argv: string[]) {
  const out: string[] = [];
  const code = await cli(argv, { out: (text) => out.push(text), err: () => {} });
  return { code, out: out.join('\n') };
}

test('a server that answers 422 to any repeat: 422 is the mismatch, not "in progress"; replays are not judged', async () => {
  const server = await startRefuseRepeatsServer();
  closers.push(() => server.close());
  const report = await runCheck({ url: `${server.url}/payments`, json: body, slow: 'X-Slow: 200' });
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  expect(severities(report.findings)).toMatchObject({
    replay: 'warn',
    'replay-marker': 'info',
    mismatch: 'pass',
    'key-order': 'info',
    'number-type': 'info',
    race: 'pass',
    'in-progress': 'warn',
  });
  expect(find('replay').result).toBe('The same key and body are refused (422): the server never replays.');
  expect(find('replay-marker').result).toMatch(/^Not measured: the repeat got 422 /);
  for (const id of ['key-order', 'number-type'])
    expect(find(id).result).toBe('Not measured: the repeat of the key with the same body was refused (422) too.');
  expect(find('in-progress').result).toMatch(
    /^A request in progress is answered 422, as .* is: the two cannot be told apart\.$/,
  );
  expect(report.suggestion!.changes).toEqual({ name: 'checked', keyEncoding: 'bare' });
  expect(report.suggestion!.profile.classify({ status: 422, headers: new Headers(), body: null })).toBe('mismatch');

  // With that profile a key reused by another client is a KeyReusedError on its first answer.
  const clients = [1, 2].map(() =>
    createClient({ baseUrl: `${server.url}/`, store: new MemoryStore(), profile: report.suggestion!.profile }),
  );
  closers.push(async () => {
    for (const client of clients) await client.close();
  });
  const key = crypto.randomUUID();
  const first = await (await clients[0]!.intent('checkout', { key })).post('payments', { json: body });
  expect(first.status).toBe(201);
  const reuse = (await clients[1]!.intent('checkout', { key })).post('payments', { json: { ...body, amount: 5 } });
  await expect(reuse).rejects.toMatchObject({ code: 'KEY_REUSED', attempts: 1 });
});

test('the verdict comes first; a server that races gets no "no changes needed"', async () => {
  const racy = await startRacyWindowServer();
  closers.push(() => racy.close());
  const failed = await run('check', `${racy.url}/payments`, '--json', JSON.stringify(body));
  expect(failed.code).toBe(1);
  const lines = failed.out.split('\n');
  expect(lines[2]).toMatch(/^FAILED: race — /);
  expect(lines.findIndex((line) => line.startsWith('FAIL  race'))).toBeGreaterThan(2);
  expect(failed.out).toMatch(/^export const serverProfile: Profile = ietf;$/m);
  expect(failed.out).not.toContain('no changes needed');
  expect(failed.out).toContain('no profile prevents the second effect the check found');

  const contract = createContractServer();
  contract.inject({ fault: 'delay', ms: 50, times: Number.POSITIVE_INFINITY }); // so the burst overlaps
  const mock = await listenContractServer(contract);
  closers.push(() => mock.close());
  const clean = await run('check', `${mock.url}/payments`, '--json', JSON.stringify(body));
  expect(clean.code).toBe(0);
  expect(clean.out.split('\n')[2]).toMatch(/^PASSED: no finding can cause a second effect/);
  expect(clean.out).toContain('export const serverProfile: Profile = ietf; // no changes needed');
});

test('--form: a Stripe-style form endpoint behind express-idempotency is measured with form bodies', async () => {
  const server = await startExpressFormServer();
  closers.push(() => server.close());
  const { code, out } = await run(
    'check',
    `${server.url}/v1/charges`,
    '--form',
    'amount=1000&currency=usd',
    '--slow',
    'X-Slow: 200',
    '--format',
    'json',
  );
  expect(code).toBe(0);
  expect([...server.contentTypes]).toEqual(['application/x-www-form-urlencoded']);
  const report = JSON.parse(out);
  expect(severities(report.findings)).toEqual({
    'key-encoding': 'warn',
    replay: 'pass',
    'replay-marker': 'warn',
    'key-length': 'pass',
    mismatch: 'info',
    'key-order': 'pass',
    race: 'pass',
    'in-progress': 'info',
    'missing-key': 'warn',
    'error-answer': 'info',
    retention: 'info',
  });
  const find = (id: string) => report.findings.find((f: { id: string }) => f.id === id);
  expect(find('mismatch').result).toBe('Another body under the same key is a 417, not 422.');
  expect(find('error-answer').evidence[0]).toMatch(/^invalid → 400 json/);
  expect(report.suggestion.changes).toEqual({
    name: 'checked',
    keyEncoding: 'bare',
    replay: 'none',
    mismatchStatuses: [417],
  });
});
