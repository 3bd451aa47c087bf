/** The `oncely check` command as a function: flags, exit codes, output formats, the printed profile. */
import { readFileSync } from 'node:fs';
import { transformSync } from 'esbuild';
import { afterEach, expect, test } from 'vitest';
import { listenContractServer } from '../node/mock-server.js';
import { cli } from '../src/cli/cli.js';
import { profileCode } from '../src/cli/report.js';
import { createContractServer } from '../src/mock/index.js';
import { ietf, type Profile } from '../src/profiles/profiles.js';
import { ietfBare, type ProfileChanges, profileVariant } from '../src/profiles/variants.js';
import { startRacyServer } from './servers/racy-server.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await cli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** The mock, slowed before commit so the burst overlaps at the server (else the race is not measured). */
async function mockUrl() {
  const contract = createContractServer();
  contract.inject({ fault: 'delay', ms: 50, times: Number.POSITIVE_INFINITY });
  const http = await listenContractServer(contract);
  closers.push(() => http.close());
  return { contract, url: `${http.url}/payments` };
}

test.each([
  [['check'], 'oncely check takes one URL, got none.'],
  [['check', 'http://127.0.0.1:1/x'], 'One of --json and --form is required'],
  [['check', 'http://127.0.0.1:1/x', '--json', '{}', '--form', 'a=1'], 'One of --json and --form is required'],
  [['check', 'http://a/x', '--json', '{}', '--rounds', '0'], '--rounds must be an integer from 1 to 10'],
  [['check', 'http://a/x', '--json', '{}', '--max-rounds', '2'], '--max-rounds must be an integer from 3 to 50'],
  [['check', 'http://127.0.0.1:1/x', '--json', '{amount:1}'], '--json is not valid JSON'],
  [['check', 'ftp://x/y', '--json', '{}'], 'needs an http(s) URL'],
  [['check', 'http://a/x', 'http://b/y', '--json', '{}'], 'takes one URL'],
  [['check', 'http://a/x', '--json', '{}', '--bogus'], 'Unknown option --bogus'],
  [['check', 'http://a/x', '--json', '{}', '--header', 'no colon'], "--header expects 'Name: value'"],
  [['check', 'http://a/x', '--json', '{}', '--format', 'xml'], '--format must be table or json'],
  [['check', 'http://a/x', '--json', '{}', '--profile', 'acme'], 'Unknown profile "acme"'],
  [['check', 'http://a/x', '--json', '{}', '--concurrency', '50'], '--concurrency must be an integer from 2 to 20'],
  [['check', 'http://a/x', '--json', '{}', '--max-requests', '10'], 'needs up to'],
  [['check', 'http://a/x', '--json', '{}', '--method', 'PUT'], '--method must be POST or PATCH'],
  [['frobnicate'], 'Unknown command "frobnicate"'],
])('bad input %j: exit 2 and a clear message', async (argv, message) => {
  const { code, err, out } = await run(...argv);
  expect(code).toBe(2);
  expect(err).toContain(message);
  expect(err).toContain('Usage: oncely check');
  expect(out).toBe('');
});

test('--help prints the usage, exit 0', async () => {
  const { code, out } = await run('--help');
  expect(code).toBe(0);
  expect(out).toContain('--dry-run');
});

test('--dry-run lists the plan and sends nothing; the warning says it creates real effects', async () => {
  const { contract, url } = await mockUrl();
  const { code, out, err } = await run('check', url, '--json', '{"amount":1000,"currency":"EUR"}', '--dry-run');
  expect(code).toBe(0);
  expect(contract.requests).toHaveLength(0);
  // 5 warm-up OPTIONS create nothing; up to 10 rounds of 5 first requests can.
  expect(err).toMatch(/sends up to 78 real requests .*up to 73 of them can create a resource.*test endpoint/);
  for (const step of ['key-quoted', 'key-bare', 'key-same', 'replay', 'key-length', 'other-body', 'warm-up', 'burst'])
    expect(out).toContain(step);
  expect(out).toContain(' 5 × OPTIONS  simultaneous, no key, no effect');
  expect(out).toContain(
    '50 × POST  5 first requests with one fresh key a round (and --slow), released at one instant, until 3 rounds overlapped at the server (at most 10)',
  );
});

test('the cap: the check refuses a plan over --max-requests before sending', async () => {
  const { contract, url } = await mockUrl();
  const { code, err } = await run('check', url, '--json', '{"amount":1}', '--max-requests', '12');
  expect(code).toBe(2);
  expect(err).toContain(
    'needs up to 76 requests but --max-requests is 12: raise it, or lower --concurrency or --max-rounds',
  );
  expect(contract.requests).toHaveLength(0);
});

test('--format json against the mock: findings, requests within the plan, the profile code; exit 0', async () => {
  const { contract, url } = await mockUrl();
  const { code, out } = await run('check', url, '--json', '{"amount":1000,"currency":"EUR"}', '--format', 'json');
  expect(code).toBe(0);
  const report = JSON.parse(out);
  expect(report).toMatchObject({ verdict: 'passed', failed: false });
  expect(report.findings.map((f: { id: string }) => f.id)).toContain('race');
  expect(report.requests.length).toBe(contract.requests.length);
  expect(report.requests.length).toBeLessThanOrEqual(78);
  expect(report.suggestion.code).toContain('export const serverProfile: Profile = ietf;');
  expect(JSON.stringify(report)).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/); // keys appear as K1, K2…
});

test('a racy server: table report with the duplicate effect, exit 1; --header goes on every request', async () => {
  const server = await startRacyServer();
  closers.push(() => server.close());
  const { code, out } = await run(
    'check',
    `${server.url}/payments`,
    '--json',
    '{"amount":1000,"currency":"EUR"}',
    '--slow',
    'X-Slow: 200',
    '--header',
    'Authorization: Bearer test',
  );
  expect(code).toBe(1);
  expect(out).toMatch(/^FAIL {2}race +In 1 of \d+ rounds, 5 simultaneous first requests with one key made more/m);
  expect(out).toContain('FAILED: race');
  expect(out).toContain('replayHeaders: [], // replays carry no marker');
});

/** The printed code, compiled and run with the profiles in scope. */
function evaluate(code: string): Profile {
  const js = transformSync(code.replace(/^import .*$/gm, ''), { loader: 'ts', format: 'cjs' }).code;
  const module = { exports: {} as { serverProfile: Profile } };
  new Function('module', 'exports', 'ietf', 'ietfBare', js)(module, module.exports, ietf, ietfBare);
  return module.exports.serverProfile;
}

test.each<ProfileChanges>([
  { name: 'checked' },
  { name: 'checked', keyEncoding: 'bare', replay: 'none', mismatchStatuses: [417] },
  { name: 'checked', replay: 'X-Idempotency-Replayed', inProgressStatuses: [425], mismatchStatuses: [412] },
  { name: 'checked', replay: { header: 'X-Cache', value: 'HIT' } },
])('the printed profile behaves as profileVariant(ietf, %j)', (changes) => {
  const printed = evaluate(profileCode('ietf', changes, 'http://127.0.0.1/x'));
  const data = profileVariant(ietf, changes);
  expect(printed.encodeKey('k1')).toBe(data.encodeKey('k1'));
  expect(printed.replayHeaders).toEqual(data.replayHeaders);
  for (const status of [200, 201, 400, 409, 412, 417, 422, 425, 429, 503]) {
    const answer = { status, headers: new Headers({ 'X-Cache': 'hit' }), body: null };
    expect([status, printed.classify(answer)]).toEqual([status, data.classify(answer)]);
  }
  const replayHook = (profile: Profile) => (profile as { isReplay?: (a: unknown) => boolean }).isReplay;
  expect(typeof replayHook(printed)).toBe(typeof replayHook(data));
  const cache = { status: 201, headers: new Headers({ 'X-Cache': 'HIT' }), body: null };
  expect(replayHook(printed)?.(cache)).toBe(replayHook(data)?.(cache));
});

test('package.json names the bin; it starts with a shebang', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  expect(pkg.bin).toEqual({ oncely: './dist/src/cli/main.js' });
  expect(readFileSync(new URL('../src/cli/main.ts', import.meta.url), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
});
