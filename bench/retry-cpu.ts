/**
 * Section 5: what scheduling a retry costs. CPU time (process.cpuUsage, this process
 * only: the server runs in another) per 1,000 attempts against a server answering 503
 * with `Retry-After: 0`, oncely's retry (ky driven by oncely's budget, memory store)
 * against bare ky's own retry of the same POST. Both count attempts through a wrapped
 * fetch, so they pay for the count alike.
 */
import ky from 'ky';
import { oncely } from './oncely.ts';
import type { ServerProcess } from './server-process.ts';
import { fmtRatio, type Spread, spread } from './stats.ts';

export interface RetryCpuOptions {
  rounds: number;
  /** Calls per variant per round; each makes `attempts` attempts. */
  calls: number;
  attempts: number;
}

export interface RetryCpuResult {
  attemptsPerCall: number;
  /** Median CPU ms per 1,000 attempts. */
  cpuMsPer1000: { ky: number; oncely: number };
  ratio: Spread;
}

const payload = { amount: 1999, currency: 'eur' };

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

async function runKy(url: string, calls: number, attempts: number): Promise<{ cpu: number; attempts: number }> {
  let count = 0;
  const api = ky.create({
    fetch: (input, init) => {
      count++;
      return fetch(input, init);
    },
    retry: { limit: attempts - 1, methods: ['post'], statusCodes: [503], afterStatusCodes: [503], jitter: false },
  });
  const start = cpuMs();
  for (let i = 0; i < calls; i++) {
    try {
      await api.post(url, { json: payload }).json();
      throw new Error('expected a 503');
    } catch (error) {
      if ((error as { response?: Response }).response?.status !== 503) throw error;
    }
  }
  return { cpu: cpuMs() - start, attempts: count };
}

async function runOncely(baseUrl: string, calls: number, attempts: number, tag: string) {
  let count = 0;
  const client = oncely.createClient({
    baseUrl,
    scope: 'bench',
    store: new oncely.MemoryStore(),
    retry: { maxAttempts: attempts, deadline: 600_000 },
    fetch: (input, init) => {
      count++;
      return fetch(input, init);
    },
  });
  const start = cpuMs();
  for (let i = 0; i < calls; i++) {
    const intent = await client.intent(`${tag}:${i}`);
    try {
      await intent.post('busy', { json: payload });
      throw new Error('expected an unknown outcome');
    } catch (error) {
      if (!(error instanceof oncely.OutcomeUnknownError)) throw error;
    }
  }
  const cpu = cpuMs() - start;
  await client.close();
  return { cpu, attempts: count };
}

export async function measureRetryCpu(server: ServerProcess, options: RetryCpuOptions): Promise<RetryCpuResult> {
  const url = `${server.baseUrl}busy`;
  await runKy(url, 20, options.attempts);
  await runOncely(server.baseUrl, 20, options.attempts, 'warm');
  const per = { ky: [] as number[], oncely: [] as number[] };
  const ratios: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const k = round % 2 === 0 ? await runKy(url, options.calls, options.attempts) : undefined;
    const o = await runOncely(server.baseUrl, options.calls, options.attempts, `r${round}`);
    const k2 = k ?? (await runKy(url, options.calls, options.attempts));
    for (const [name, run] of [
      ['ky', k2],
      ['oncely', o],
    ] as const) {
      if (run.attempts !== options.calls * options.attempts)
        throw new Error(`${name} made ${run.attempts} attempts, expected ${options.calls * options.attempts}`);
    }
    const kyPer = (k2.cpu / k2.attempts) * 1000;
    const oncelyPer = (o.cpu / o.attempts) * 1000;
    per.ky.push(kyPer);
    per.oncely.push(oncelyPer);
    ratios.push(oncelyPer / kyPer);
  }
  return {
    attemptsPerCall: options.attempts,
    cpuMsPer1000: { ky: spread(per.ky).median, oncely: spread(per.oncely).median },
    ratio: spread(ratios),
  };
}

export function retryCpuRows(r: RetryCpuResult): string[][] {
  return [
    [
      `retry CPU per 1,000 attempts (${r.attemptsPerCall} per call): oncely / bare ky`,
      fmtRatio(r.ratio),
      `${r.cpuMsPer1000.oncely.toFixed(0)} ms vs ${r.cpuMsPer1000.ky.toFixed(0)} ms CPU`,
    ],
  ];
}
