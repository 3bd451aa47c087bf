// Regenerates docs/check-reports.md: starts the servers the check is tested with (the
// test/ helpers, on 127.0.0.1, Redis through Debian's redis-server) and runs the built bin
// against each, as a user would. Run after `npm run build`:
//   node --import ./scripts/ts-resolve.ts scripts/check-reports.ts
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const load = (path: string) => import(join(repo, path));
const { listenContractServer } = await load('node/mock-server.ts');
const { createContractServer } = await load('src/mock/index.ts');
const { startApiServer } = await load('e2e/server/api-server.ts');
const { invalidPayment, sleep, slowMs } = await load('test/servers/listen.ts');
const { startExpressIdempotencyServer } = await load('test/servers/express-idempotency-server.ts');
const { startNodeIdempotencyServer } = await load('test/servers/node-idempotency-server.ts');
const { startRacyServer } = await load('test/servers/racy-server.ts');
const { startRacyWindowServer } = await load('test/check/racy-window-server.ts');
const { startRefuseRepeatsServer } = await load('test/check/refuse-repeats-server.ts');
const { startRedisServer } = await load('test/check/redis-server.ts');
const { startExpressRedisServer } = await load('test/check/express-redis-server.ts');
const { startExpressFormServer } = await load('test/check/express-form-server.ts');
const { startFingerprintBoundServer } = await load('test/check/fingerprint-bound-server.ts');
const { startHiddenRaceServer } = await load('test/check/hidden-race-server.ts');

type Started = { url: string; close(): Promise<void> };
interface Case {
  title: string;
  path?: string;
  args: string[];
  start(): Promise<Started>;
}

const JSON_BODY = ['--json', '{"amount":1000,"currency":"EUR"}'];
const SLOW = ['--slow', 'X-Slow:200'];

/** The mock with payments that validate their body (so errors can be stored) and honour X-Slow. */
async function startMock(): Promise<Started> {
  let n = 0;
  const contract = createContractServer({
    routes: {
      'POST /payments': async ({ json, request }: { json: unknown; request: Request }) => {
        const invalid = invalidPayment(json);
        if (invalid) return { status: 400, body: { type: 'about:blank', title: 'Invalid payment', detail: invalid } };
        await sleep(slowMs(request.headers.get('x-slow') ?? undefined));
        return { status: 201, body: { id: `pay_${++n}`, ...(json as object) } };
      },
    },
  });
  return listenContractServer(contract);
}

async function startE2e(): Promise<Started> {
  const api = await startApiServer();
  await fetch(`${api.url}/__control`, { method: 'POST', body: JSON.stringify({ delay: 100 }) });
  return api;
}

const redis = await startRedisServer();
const cases: Case[] = [
  {
    title: 'oncely/mock (keyFormat sf-string, storeResponses all; `--slow X-Slow:200 --origin https://shop.example`)',
    args: [...JSON_BODY, ...SLOW, '--origin', 'https://shop.example'],
    start: startMock,
  },
  {
    title:
      'e2e payments server, Express on oncely/server over SqliteKeyStore (`{delay: 100}` via /__control; `--origin https://shop.example`)',
    args: [...JSON_BODY, '--origin', 'https://shop.example'],
    start: startE2e,
  },
  {
    title: 'express-idempotency 1.0.6, memory adapter (`--slow X-Slow:200`)',
    args: [...JSON_BODY, ...SLOW],
    start: startExpressIdempotencyServer,
  },
  {
    title: "express-idempotency 1.0.6 on Redis 7 (its Redis adapter's GET, then SET; no `--slow`)",
    args: JSON_BODY,
    start: () => startExpressRedisServer(redis.socket),
  },
  {
    title: "@node-idempotency/core 1.0.11 behind the tests' Express 5 adapter (`--slow X-Slow:200`)",
    args: [...JSON_BODY, ...SLOW],
    start: startNodeIdempotencyServer,
  },
  {
    title: 'the racy read-then-write server (`--slow X-Slow:200`)',
    args: [...JSON_BODY, ...SLOW],
    start: startRacyServer,
  },
  {
    title: 'a draft-conformant server whose key store has a 1 ms read-then-write window (no `--slow`)',
    args: JSON_BODY,
    start: startRacyWindowServer,
  },
  {
    title: 'a server that answers 422 to every repeat of a key (`--slow X-Slow:200`)',
    args: [...JSON_BODY, ...SLOW],
    start: startRefuseRepeatsServer,
  },
  {
    title:
      "express-idempotency 1.0.6 on a Stripe-style form endpoint (`--form 'amount=1000&currency=usd' --slow X-Slow:200`)",
    path: '/v1/charges',
    args: ['--form', 'amount=1000&currency=usd', ...SLOW],
    start: startExpressFormServer,
  },
  {
    title: 'a racy server that binds a body to the first key that sent it (one fixed body: INCONCLUSIVE)',
    args: JSON_BODY,
    start: startFingerprintBoundServer,
  },
  {
    title: 'the same server with a body per key (`--json \'{"amount":1000,"currency":"EUR","ref":"{{key}}"}\'`)',
    args: ['--json', '{"amount":1000,"currency":"EUR","ref":"{{key}}"}'],
    start: startFingerprintBoundServer,
  },
  {
    title: 'a read-then-write store whose window opens only when slowed (no `--slow`: the race is not measured)',
    args: JSON_BODY,
    start: startHiddenRaceServer,
  },
];

const bin = join(repo, 'dist/src/cli/main.js');
const runBin = (args: string[]) =>
  new Promise<{ code: number; out: string }>((done) => {
    // Async: the servers answering the bin live in this process.
    execFile(process.execPath, [bin, ...args], { cwd: repo }, (error, stdout) =>
      done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, out: stdout.trimEnd() }),
    );
  });

const today = new Date().toISOString().slice(0, 10);
const doc = [
  '# `oncely check` reports against the servers it is tested with',
  '',
  `Recorded on ${today} by \`scripts/check-reports.ts\`: it starts the test servers of \`test/check-*.test.ts\` (loopback) and runs the built bin against each.`,
  '',
  '## Reports (real runs of the built bin, `node dist/src/cli/main.js check <url>/payments --json \'{"amount":1000,"currency":"EUR"}\'` plus the options named)',
];
try {
  for (const c of cases) {
    const server = await c.start();
    try {
      const { code, out } = await runBin(['check', `${server.url}${c.path ?? '/payments'}`, ...c.args]);
      doc.push('', `### ${c.title}`, '```text', out, `exit ${code}`, '```');
      console.log(`check-reports: ${c.title.split(' (')[0]}: exit ${code}`);
    } finally {
      await server.close();
    }
  }
} finally {
  await redis.stop();
}
writeFileSync(join(repo, 'docs/check-reports.md'), `${doc.join('\n')}\n`);
console.log('check-reports: wrote docs/check-reports.md');
