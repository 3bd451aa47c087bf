/**
 * The race step must catch a racing key store in every run, not in most: 20 full checks
 * in a row (50 in `npm run chaos`: ONCELY_CHECK_RACE_RUNS), each must fail `race`. Against
 * a server of our own whose read-then-write window is one 1 ms timer, and against
 * express-idempotency on a real Redis (Debian's redis-server, started and stopped here)
 * with its Redis adapter's GET-then-SET. Default options (no --slow): the window is the
 * server's own. A round whose requests did not overlap at the server does not count, so
 * the check keeps bursting until one does (or its budget ends: then "not measured", exit 3,
 * never PASSED); each report states that power.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { runCheck } from '../src/cli/check.js';
import { startExpressRedisServer } from './check/express-redis-server.js';
import { startRacyWindowServer } from './check/racy-window-server.js';
import { type RedisServer, startRedisServer } from './check/redis-server.js';
import type { TestServer } from './servers/listen.js';

const RUNS = Number(process.env.ONCELY_CHECK_RACE_RUNS ?? 20);
const body = { amount: 1000, currency: 'EUR' };

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.stop();
});

/** The race finding of each of `RUNS` checks in a row against one server. */
async function raceFindings(server: TestServer) {
  try {
    const results: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const report = await runCheck({ url: `${server.url}/payments`, json: body });
      const race = report.findings.find((f) => f.id === 'race')!;
      results.push(`${race.severity}: ${race.result} (${race.evidence?.at(-1)})`);
      expect(report.verdict).toBe(race.severity === 'fail' ? 'failed' : 'inconclusive');
      expect(report.power).toMatchObject({ burst: 5, wanted: 3 });
      expect(race.evidence?.at(-1)).toMatch(/^power: \d+ of \d+ rounds × 5 requests overlapped at the server/);
    }
    if (process.env.ONCELY_PRINT_REPORTS) console.log(results.join('\n'));
    return results;
  } finally {
    await server.close();
  }
}

const caught = (results: string[]) => results.filter((line) => line.startsWith('fail: ')).length;

test(
  `a 1 ms read-then-write window is caught in ${RUNS} of ${RUNS} checks`,
  async () => {
    const results = await raceFindings(await startRacyWindowServer());
    expect(results.join('\n')).toMatch(
      /^fail: In 1 of \d+ rounds, 5 simultaneous first requests with one key made more than one resource/,
    );
    expect({ caught: caught(results), results }).toMatchObject({ caught: RUNS });
  },
  30_000 + RUNS * 3_000,
);

test(
  `express-idempotency on Redis (GET, then SET) is caught in ${RUNS} of ${RUNS} checks`,
  async () => {
    const server = await startExpressRedisServer(redis.socket);
    const effectsBefore = server.effects();
    const results = await raceFindings(server);
    expect({ caught: caught(results), results }).toMatchObject({ caught: RUNS });
    expect(server.effects() - effectsBefore).toBeGreaterThan(RUNS * 3); // the doubles are real effects
  },
  30_000 + RUNS * 3_000,
);
