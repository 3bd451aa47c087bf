/**
 * Model-based chaos (see `chaos/model.ts`): random schedules of server behaviour and
 * client steps, in virtual time, checked against the exactly-once invariants. `npm test`
 * runs 1,000 schedules; `npm run chaos` 100,000 (`ONCELY_CHAOS_RUNS`). A failure prints
 * fast-check's `seed` and `path`: replay it with `ONCELY_CHAOS_SEED=… ONCELY_CHAOS_PATH=…`,
 * then keep the shrunk schedule in `chaos-regressions.test.ts`.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAndCheck, type Schedule, scheduleArb } from './chaos/model.js';
import { chaosParameters, chaosTimeout } from './chaos/runs.js';
import { useVirtualTime } from './chaos/virtual-time.js';

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => restore());

const figures = { schedules: 0, calls: 0, requests: 0, resumed: 0, keptLock: 0, duplicates: 0 };

describe('model-based chaos: no second effect, whatever the server and the clients do', () => {
  it('post() and run() under random faults, restarts, duplicates, aborts and body changes', {
    timeout: chaosTimeout(180_000),
  }, async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArb(), async (schedule) => {
        const { world, resumed, keptLockSends } = await runAndCheck(schedule);
        figures.schedules++;
        figures.keptLock += keptLockSends;
        figures.calls += world.calls.length;
        figures.requests += world.wire.length;
        figures.resumed += resumed.length;
      }),
      chaosParameters(1000),
    );
    console.log(
      `chaos model: ${figures.schedules} schedules, ${figures.calls} calls, ${figures.requests} requests, ` +
        `${figures.resumed} unknown intents resumed, ${figures.keptLock} sends under a kept lock, ${figures.duplicates} duplicates`,
    );
    expect(figures.schedules).toBeGreaterThan(0);
    // Tabs that keep their locks (as the hook does) take the path where in_flight goes out with the request.
    expect(figures.keptLock).toBeGreaterThan(0);
  });

  it('runs are deterministic: a schedule replayed gives the same requests, answers and times', async () => {
    const samples = fc.sample(scheduleArb(), { numRuns: 25, seed: 20261130 });
    for (const schedule of samples) {
      const first = await runAndCheck(schedule);
      const second = await runAndCheck(schedule);
      const summary = (r: typeof first) => ({
        trace: r.world.trace,
        calls: r.world.calls.map((c) => [
          c.step,
          c.name,
          c.ok,
          c.aborted,
          (c.error as Error | undefined)?.name,
          c.attempts,
        ]),
      });
      expect(summary(second)).toEqual(summary(first));
    }
  });

  it('the checks see a second effect when a key is lost (a restart that loses the store)', async () => {
    const schedule: Schedule = {
      profile: 'ietf',
      retry: {
        maxAttempts: 1,
        deadline: 60_000,
        timeout: 10_000,
        baseDelay: 1,
        maxDelay: 5,
        maxRetryAfter: 5,
        inProgressDelay: 1,
      },
      sharedCoordinator: true,
      intents: 1,
      steps: [
        { kind: 'send', client: 0, intent: 0, variant: 0, transport: 'post' },
        { kind: 'restart', client: 0 },
        { kind: 'send', client: 0, intent: 0, variant: 0, transport: 'post' },
      ],
      server: [{ kind: 'drop' }],
    };
    await runAndCheck(schedule);
    await expect(runAndCheck(schedule, { loseStoreOnRestart: true })).rejects.toThrow(
      /second key|more than one effect/,
    );
  });
});
