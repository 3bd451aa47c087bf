/**
 * `oncely check` against `oncely/mock` over node:http (`listenContractServer`), in each
 * strictness (key format × which responses are stored) and under its faults; then oncely
 * with the suggested profile under `drop-after-commit`.
 */
import { afterEach, expect, test } from 'vitest';
import { listenContractServer } from '../node/mock-server.js';
import { runCheck } from '../src/cli/check.js';
import { formatReport } from '../src/cli/report.js';
import { type ContractServerOptions, createContractServer, type FaultSpec, type Routes } from '../src/mock/index.js';
import { invalidPayment, sleep, slowMs } from './servers/listen.js';
import { oncePerIntent, severities } from './servers/once-per-intent.js';

const body = { amount: 1000, currency: 'EUR' };
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** Payments that validate their body (so errors can be stored) and honour `X-Slow`. */
function paymentRoutes(): Routes {
  let n = 0;
  return {
    'POST /payments': async ({ json, request }) => {
      const invalid = invalidPayment(json);
      if (invalid) return { status: 400, body: { type: 'about:blank', title: 'Invalid payment', detail: invalid } };
      await sleep(slowMs(request.headers.get('x-slow') ?? undefined));
      return { status: 201, body: { id: `pay_${++n}`, ...(json as object) } };
    },
  };
}

async function mock(options: ContractServerOptions = {}, faults: FaultSpec[] = []) {
  const contract = createContractServer({ routes: paymentRoutes(), ...options });
  contract.inject(...faults);
  const http = await listenContractServer(contract);
  closers.push(() => http.close());
  return { contract, url: http.url };
}

const ietfLike = (encoding: 'quoted' | 'bare' | 'either') => ({
  'key-encoding': encoding === 'bare' ? 'warn' : 'pass',
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

const strictness = [
  { keyFormat: 'sf-string', storeResponses: 'all', encoding: 'quoted' },
  { keyFormat: 'sf-string', storeResponses: '2xx', encoding: 'quoted' },
  { keyFormat: 'bare', storeResponses: 'all', encoding: 'bare' },
  { keyFormat: 'bare', storeResponses: '2xx', encoding: 'bare' },
  { keyFormat: 'any', storeResponses: 'all', encoding: 'either' },
  { keyFormat: 'any', storeResponses: '2xx', encoding: 'either' },
] as const;

test.each(strictness)(
  'keyFormat $keyFormat, storeResponses $storeResponses',
  async ({ keyFormat, storeResponses, encoding }) => {
    const { contract, url } = await mock({ keyFormat, storeResponses });
    const report = await runCheck({
      url: `${url}/payments`,
      json: body,
      slow: 'X-Slow: 200',
      origin: 'https://shop.example',
    });
    if (process.env.ONCELY_PRINT_REPORTS) console.log(formatReport(report));
    expect(severities(report.findings)).toEqual(ietfLike(encoding));
    const find = (id: string) => report.findings.find((f) => f.id === id)!;
    expect(find('in-progress').result).toBe('A request in progress is a 409 with Retry-After: 1.');
    expect(find('key-length').result).toBe('Keys of 255 characters are accepted; 256 characters are not.');
    expect(find('error-answer').result).toContain(storeResponses === 'all' ? 'is stored' : 'not stored');
    expect(report.failed).toBe(false);
    expect(report.suggestion!.changes).toEqual(
      encoding === 'bare' ? { name: 'checked', keyEncoding: 'bare' } : { name: 'checked' },
    );

    const once = await oncePerIntent({
      baseUrl: url,
      profile: report.suggestion!.profile,
      body,
      dropNext: () => contract.inject({ fault: 'drop-after-commit', match: { path: '/payments' } }),
      effects: () => contract.effects(),
    });
    expect(once).toEqual({ effects: 2, statuses: [201, 201], attempts: [2, 2] });
    expect(contract.pendingFaults).toBe(0);
  },
);

test('fault: delay before commit makes the burst overlap without --slow (409 + Retry-After)', async () => {
  const { url } = await mock({}, [{ fault: 'delay', ms: 150, times: Number.POSITIVE_INFINITY }]);
  const report = await runCheck({ url: `${url}/payments`, json: body, concurrency: 3 });
  expect(severities(report.findings)).toMatchObject({ race: 'pass', 'in-progress': 'pass' });
  const burst = report.requests.filter((r) => r.step === 'burst').map((r) => r.status);
  expect(burst).toContain(201);
  expect(burst).toContain(409);
});

test.each([
  { name: 'fail-before-commit (503)', fault: { fault: 'fail-before-commit' } as FaultSpec, first: 503 },
  {
    name: 'status 429 in front of the idempotency layer',
    fault: { fault: 'status', status: 429 } as FaultSpec,
    first: 429,
  },
  { name: 'hang (the check times out)', fault: { fault: 'hang' } as FaultSpec, first: 0 },
])('fault: $name on the first request is retried once with the same key', async ({ fault, first }) => {
  const { contract, url } = await mock({}, [fault]);
  const report = await runCheck({ url: `${url}/payments`, json: body, timeout: first === 0 ? 300 : 10_000 });
  expect(report.requests.slice(0, 2)).toMatchObject([
    { step: 'key-quoted', key: 'K1 quoted', status: first },
    { step: 'key-quoted', key: 'K1 quoted', status: 201 },
  ]);
  expect(severities(report.findings)).toMatchObject({ 'key-encoding': 'pass', replay: 'pass', race: 'pass' });
  expect(report.failed).toBe(false);
  expect(contract.pendingFaults).toBe(0);
});

test('a server that is down is one unmeasured finding, an inconclusive verdict and no profile', async () => {
  const { url } = await mock();
  await closers.pop()!();
  const report = await runCheck({ url: `${url}/payments`, json: body });
  expect(report.findings).toMatchObject([{ id: 'reachable', severity: 'unmeasured' }]);
  expect(report).toMatchObject({ verdict: 'inconclusive', failed: true });
  expect(report.suggestion).toBeUndefined();
  expect(report.requests).toHaveLength(4);
});
