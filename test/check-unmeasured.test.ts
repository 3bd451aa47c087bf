/**
 * `oncely check` says PASSED only about what it measured (issue 31). Servers written to
 * show each way a step can fail to measure: one that binds a body to the first key that
 * sent it (the race and the key steps cannot make fresh first requests with one body), one
 * whose race window opens only when the effect is slowed (the burst never overlaps without
 * --slow), one that answers a repeat with other bytes with a 500.
 */
import { afterEach, expect, test } from 'vitest';
import { runCheck } from '../src/cli/check.js';
import { cli } from '../src/cli/cli.js';
import { formatReport } from '../src/cli/report.js';
import { startFingerprintBoundServer } from './check/fingerprint-bound-server.js';
import { startFlakyRepeatServer } from './check/flaky-repeat-server.js';
import { startHiddenRaceServer } from './check/hidden-race-server.js';
import type { TestServer } from './servers/listen.js';
import { severities } from './servers/once-per-intent.js';

const body = { amount: 1000, currency: 'EUR' };
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(start: () => Promise<TestServer>) {
  const server = await start();
  closers.push(() => server.close());
  return server;
}

async function run(...argv: string[]) {
  const out: string[] = [];
  const code = await cli(argv, { out: (text) => out.push(text), err: () => {} });
  return { code, out: out.join('\n') };
}

const print = (report: Parameters<typeof formatReport>[0]) => {
  if (process.env.ONCELY_PRINT_REPORTS) console.log(formatReport(report));
};

test('a server that binds a body to its first key, one fixed body: INCONCLUSIVE (exit 3), never PASSED; the report says to use a template', async () => {
  const server = await serve(startFingerprintBoundServer);
  const { code, out } = await run('check', `${server.url}/payments`, '--json', JSON.stringify(body));
  expect(code).toBe(3);
  const lines = out.split('\n');
  expect(lines[2]).toMatch(/^INCONCLUSIVE: race not measured — no second effect was found/);
  expect(out).not.toContain('PASSED');
  expect(out).toMatch(
    /^\?{4} {2}race +Not measured: in round 1, none of 5 first requests with a fresh key succeeded\.$/m,
  );
  expect(out.replace(/\n +/g, ' ')).toContain(
    `to measure race: If the server refuses a body that another key already sent, give each key its own body with a template: --json '{"amount":1000,"ref":"{{key}}"}'`,
  );
  expect(out).toContain('the race or the replay was not measured, so a second effect is not ruled out');
  expect(out).not.toContain('no changes needed');
});

test('the body, not the key, is refused: key encoding and key length are not concluded from it', async () => {
  const server = await serve(startFingerprintBoundServer);
  const report = await runCheck({ url: `${server.url}/payments`, json: body });
  print(report);
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  expect(find('key-encoding').result).toBe(
    'Not measured: a fresh quoted key was refused too, so the refusal of the bare key is not about its encoding.',
  );
  expect(find('key-encoding').evidence).toEqual([
    'bare key → 409 problem+json "Fingerprint conflict: this body was sent with another key"',
    'control, a fresh quoted key → 409 problem+json "Fingerprint conflict: this body was sent with another key"',
  ]);
  expect(find('key-length').result).toBe(
    'Not measured: a key of 64 characters was refused, and so was a fresh key of 36 characters (the control): the refusal is not about the length.',
  );
  for (const id of ['key-encoding', 'key-length']) expect(find(id).remedy).toContain('{{key}}');
  expect(find('in-progress').result).toBe('Not measured: no round of the burst got a 2xx.');
  expect(find('error-answer').result).toBe(
    'Not measured: the valid body under that key got 409 problem+json "Fingerprint conflict: this body was sent with another key", neither the stored 400 nor a 2xx.',
  );
  expect(report).toMatchObject({ verdict: 'inconclusive', failed: true });
});

test('the same server with a body template (--json with {{key}}): every key step is measured and the race is found', async () => {
  const server = await serve(startFingerprintBoundServer);
  const report = await runCheck({ url: `${server.url}/payments`, json: { ...body, ref: '{{key}}' } });
  print(report);
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  expect(severities(report.findings)).toMatchObject({
    'key-encoding': 'warn',
    replay: 'pass',
    'replay-marker': 'pass',
    'key-length': 'pass',
    mismatch: 'pass',
    race: 'fail',
  });
  expect(find('key-encoding').result).toBe('The server takes the key verbatim: "k" and k are two different keys.');
  expect(find('key-length').result).toBe('Keys of 255 characters are accepted; 256 characters are not.');
  expect(report).toMatchObject({ verdict: 'failed', failed: true });
  expect(server.effects()).toBeGreaterThan(report.requests.filter((r) => r.step === 'burst').length / 5);
});

test('--form with {{key}}: each key gets its own form body', async () => {
  const seen: string[] = [];
  const fetch: typeof globalThis.fetch = async (_url, init) => {
    seen.push(String(init?.body));
    return new Response('', { status: 503 }); // transient: each key is sent twice, with its own body
  };
  const report = await runCheck({ url: 'http://127.0.0.1:9/v1/charges', form: 'amount=1000&ref={{key}}', fetch });
  expect(report.verdict).toBe('inconclusive');
  expect(seen).toHaveLength(4);
  expect(new Set(seen).size).toBe(2); // two keys (each sent twice): two bodies
  for (const text of seen) expect(text).toMatch(/^amount=1000&ref=[0-9a-f]{8}-[0-9a-f-]{27}$/);
});

test('a race window that opens only when the effect is slow: without --slow the race is not measured (exit 3), with it the race is found', async () => {
  const server = await serve(startHiddenRaceServer);
  const quick = await runCheck({ url: `${server.url}/payments`, json: body });
  print(quick);
  const race = quick.findings.find((f) => f.id === 'race')!;
  expect(race.severity).toBe('unmeasured');
  expect(race.result).toMatch(
    /^Not measured: in 10 rounds of 5 simultaneous first requests, the requests overlapped at the server in 0 \(3 wanted\)/,
  );
  expect(race.remedy).toMatch(/^Pass --slow 'Name: ms' with a header that makes the server's effect slow/);
  expect(quick.power).toEqual({ rounds: 10, overlapped: 0, wanted: 3, burst: 5, overlappingRepeats: 0, repeats: 40 });
  expect(quick.verdict).toBe('inconclusive');

  const slowed = await run('check', `${server.url}/payments`, '--json', JSON.stringify(body), '--slow', 'X-Slow: 20');
  expect(slowed.code).toBe(1);
  expect(slowed.out).toMatch(/^FAIL {2}race +In 1 of 1 rounds, 5 simultaneous first requests with one key made more/m);
});

test('a repeat answered with a 500 (sent twice): key order and number type are not judged from it', async () => {
  const server = await serve(startFlakyRepeatServer);
  const report = await runCheck({ url: `${server.url}/payments`, json: body, slow: 'X-Slow: 50' });
  print(report);
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  for (const id of ['key-order', 'number-type']) {
    expect(find(id)).toMatchObject({ severity: 'info' });
    expect(find(id).result).toBe(
      'Not measured: the repeat got 500 problem+json "Internal Server Error" twice, not the server\'s word about the key.',
    );
  }
  expect(report.requests.filter((r) => r.step === 'key-order').map((r) => r.status)).toEqual([500, 500]);
  expect(severities(report.findings)).toMatchObject({ replay: 'pass', race: 'pass' });
  expect(report.verdict).toBe('passed');
});

test('answers that cannot be told apart (no id, no Location, empty bodies): the race and the replay are not measured', async () => {
  const fetch: typeof globalThis.fetch = async (_url, init) =>
    new Response(null, { status: init?.method === 'OPTIONS' ? 204 : 201 });
  const report = await runCheck({ url: 'http://127.0.0.1:9/payments', json: body, fetch });
  expect(severities(report.findings)).toMatchObject({ identity: 'warn', replay: 'unmeasured', race: 'unmeasured' });
  const find = (id: string) => report.findings.find((f) => f.id === id)!;
  for (const id of ['replay', 'race']) expect(find(id).remedy).toContain('(a field `id`, or a Location header)');
  expect(report).toMatchObject({ verdict: 'inconclusive', failed: true });
});
