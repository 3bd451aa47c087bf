/**
 * `runCheck`: measures one endpoint's idempotency with the sequence in `check-plan.ts`
 * (plain fetch, fresh keys, a request cap) and says which profile oncely needs for it.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Profile } from '../profiles/profiles.js';
import { type ProfileChanges, profileVariant } from '../profiles/variants.js';
import { type CheckOptions, type ResolvedCheckOptions, resolveCheckOptions } from './check-options.js';
import { checkPlan, KEY_LENGTH_LADDER, type PlanStep, planTotals, type StepId } from './check-plan.js';
import { type Finding, finding } from './findings.js';
import {
  describe,
  judgeCors,
  judgeErrorAnswer,
  judgeInProgress,
  judgeMismatch,
  judgeRace,
  judgeReplay,
} from './judge.js';
import { identityOf, isSuccess, type ProbeAnswer, type ProbeRequest, Prober } from './probe.js';

export type { CheckOptions } from './check-options.js';

/** One request of the check, as the report lists it. Keys are named K1, K2… (never sent anywhere else). */
export interface CheckRequest {
  step: StepId;
  key: string;
  status: number;
  note?: string;
}

export interface CheckReport {
  url: string;
  method: string;
  plan: PlanStep[];
  requests: CheckRequest[];
  findings: Finding[];
  /** True when a finding can cause a second effect (or nothing could be measured): exit 1. */
  failed: boolean;
  /** The profile to use, as data: `base` plus `changes`. Absent when nothing was measured. */
  suggestion?: { base: string; changes: ProfileChanges; profile: Profile };
}

const freshKey = (length = 36): string => {
  let key = crypto.randomUUID();
  while (key.length < length) key += `-${crypto.randomUUID()}`;
  return key.slice(0, length);
};

const isTransient = (answer: ProbeAnswer): boolean =>
  answer.status === 0 || answer.status === 408 || answer.status === 429 || answer.status >= 500;

/** Whether `profile` sends the key bare. */
const sendsBare = (profile: Profile): boolean => profile.encodeKey('k') === 'k';

/** The plan for these options (what `--dry-run` prints). */
export function planFor(options: CheckOptions): { plan: PlanStep[]; requests: number; effects: number } {
  const resolved = resolveCheckOptions(options);
  const plan = planOf(resolved);
  const totals = planTotals(plan);
  if (totals.requests > resolved.maxRequests)
    throw new InvalidArgumentError(
      `The check needs up to ${totals.requests} requests but --max-requests is ${resolved.maxRequests}: raise it or lower --concurrency.`,
    );
  return { plan, ...totals };
}

const planOf = (o: ResolvedCheckOptions) =>
  checkPlan({
    concurrency: o.concurrency,
    rounds: o.rounds,
    origin: o.origin,
    reorderable: o.body.reordered !== undefined,
    hasNumber: o.body.loose !== undefined,
  });

/**
 * Run the check. It sends real requests that create real effects: use a test endpoint.
 * @example
 * const report = await runCheck({ url: 'http://127.0.0.1:3000/payments', json: { amount: 1000, currency: 'EUR' } });
 * if (report.failed) process.exitCode = 1;
 */
export async function runCheck(options: CheckOptions): Promise<CheckReport> {
  const { plan } = planFor(options);
  const o = resolveCheckOptions(options);
  const prober = new Prober({
    url: o.url,
    keyHeader: o.profile.header,
    headers: o.headers,
    origin: o.origin,
    maxRequests: o.maxRequests,
    timeout: o.timeout,
    fetch: o.fetch,
  });
  const requests: CheckRequest[] = [];
  const findings: Finding[] = [];
  const aliases = new Map<string, string>();
  const alias = (key: string | undefined) => {
    if (key === undefined) return 'none';
    if (!aliases.has(key)) aliases.set(key, `K${aliases.size + 1}`);
    return aliases.get(key)!;
  };
  const valid = o.body.text;
  const request = (key: string | undefined, encoding: 'quoted' | 'bare', body: string, slow = false): ProbeRequest => ({
    method: o.method,
    key: key === undefined ? undefined : encoding === 'quoted' ? `"${key}"` : key,
    body,
    contentType: o.body.contentType,
    ...(slow && o.slow ? { extraHeaders: [o.slow] } : {}),
  });
  const record = (step: StepId, key: string | undefined, encoding: 'quoted' | 'bare', answer: ProbeAnswer) => {
    const label =
      key === undefined ? 'none' : `${alias(key)} ${encoding}${key.length === 36 ? '' : ` (${key.length})`}`;
    requests.push({ step, key: label, status: answer.status, ...(answer.error ? { note: answer.error } : {}) });
    return answer;
  };
  const send = async (step: StepId, key: string | undefined, encoding: 'quoted' | 'bare', body = valid) =>
    record(step, key, encoding, await prober.send(request(key, encoding, body)));
  const report = (): CheckReport => ({
    url: o.url,
    method: o.method,
    plan,
    requests,
    findings,
    failed: findings.some((f) => f.severity === 'fail'),
  });

  // key-quoted, key-bare: which encodings get a 2xx; two fresh keys must make two resources.
  // A transient answer (5xx, 408, 429, no answer) says nothing about the key: once more, same key.
  const settled = async (step: StepId, key: string, encoding: 'quoted' | 'bare') => {
    const answer = await send(step, key, encoding);
    return isTransient(answer) ? send(step, key, encoding) : answer;
  };
  const k1 = freshKey();
  const a1 = await settled('key-quoted', k1, 'quoted');
  const k2 = freshKey();
  const a2 = await settled('key-bare', k2, 'bare');
  const quotedOk = isSuccess(a1);
  const bareOk = isSuccess(a2);
  if (!quotedOk && !bareOk) {
    findings.push(
      finding('reachable', 'fail', 'fail', 'No valid request got a 2xx: nothing else was measured.', [
        `quoted key → ${describe(a1)}`,
        `bare key → ${describe(a2)}`,
      ]),
    );
    return report();
  }
  const id1 = identityOf(a1);
  const reliable = quotedOk && bareOk ? id1 !== undefined && id1 !== identityOf(a2) : (quotedOk ? a1 : a2).text !== '';
  if (!reliable)
    findings.push(
      finding('identity', 'unknown', 'warn', 'Two fresh keys gave answers that cannot be told apart.', [
        `${identityOf(a1) ?? 'empty'} / ${identityOf(a2) ?? 'empty'}`,
      ]),
    );

  // key-same: is the quoted key, sent bare, the same key?
  let encoding: 'quoted' | 'bare';
  if (quotedOk && bareOk) {
    const same = await send('key-same', k1, 'bare');
    const replayed = isSuccess(same) && reliable && identityOf(same) === id1;
    encoding = replayed ? 'quoted' : 'bare';
    findings.push(
      replayed
        ? finding('key-encoding', 'decoded', 'pass', 'Quoted and bare keys are accepted and are the same key.')
        : finding(
            'key-encoding',
            'verbatim',
            'warn',
            'The server takes the key verbatim: "k" and k are two different keys.',
            [`"K1" → ${describe(a1)}; K1 → ${describe(same)}`],
          ),
    );
  } else {
    encoding = quotedOk ? 'quoted' : 'bare';
    findings.push(
      quotedOk
        ? finding('key-encoding', 'quotedOnly', 'pass', 'Only the quoted Structured Field key is accepted.', [
            `bare key → ${describe(a2)}`,
          ])
        : finding('key-encoding', 'bareOnly', 'info', 'Only a bare key is accepted.', [`quoted key → ${describe(a1)}`]),
    );
  }
  const key = encoding === 'quoted' ? k1 : k2;
  const first = encoding === 'quoted' ? a1 : a2;

  // replay: the first key and body again.
  const again = await send('replay', key, encoding);
  const replay = judgeReplay(first, again, reliable, o.profile);
  findings.push(...replay.findings);

  // key-length: the longest key of the ladder that gets a 2xx.
  let longest = 36;
  let rejected: string | undefined;
  for (const length of KEY_LENGTH_LADDER) {
    const answer = await send('key-length', freshKey(length), encoding);
    if (!isSuccess(answer)) {
      rejected = `${length} characters → ${describe(answer)}`;
      break;
    }
    longest = length;
  }
  findings.push(
    finding(
      'key-length',
      longest >= 255 ? 'ok' : 'short',
      longest >= 255 ? 'pass' : longest >= 64 ? 'info' : 'warn',
      `Keys of ${longest} characters are accepted${rejected ? `; ${rejected.split(' →')[0]} are not` : ` (the longest tried)`}.`,
      rejected ? [rejected] : undefined,
    ),
  );

  // other-body, key-order, number-type: the first key with other bodies.
  const changed = await send('other-body', key, encoding, o.body.other);
  const mismatch = judgeMismatch(first, changed, reliable, o.profile);
  findings.push(mismatch.finding);
  const sameRequest = (answer: ProbeAnswer) =>
    isSuccess(answer) && (!reliable || identityOf(answer) === identityOf(first));
  // A server that refuses every repeat of a key gives the same refusal to these: not a measurement.
  const unmeasured = (answer: ProbeAnswer) =>
    replay.refused !== undefined && answer.status === replay.refused
      ? `Not measured: the repeat of the key with the same body was refused (${replay.refused}) too.`
      : undefined;
  const reordered = o.body.reordered;
  if (reordered !== undefined) {
    const answer = await send('key-order', key, encoding, reordered);
    const skipped = unmeasured(answer);
    findings.push(
      skipped
        ? finding('key-order', 'unmeasured', 'info', skipped, [describe(answer)])
        : sameRequest(answer)
          ? finding('key-order', 'same', 'pass', 'The same body with its fields in another order is the same request.')
          : finding('key-order', 'strict', 'info', 'Fields in another order make another request to this server.', [
              describe(answer),
            ]),
    );
  }
  const loose = o.body.loose;
  if (loose !== undefined) {
    const answer = await send('number-type', key, encoding, loose.text);
    const skipped = unmeasured(answer);
    findings.push(
      skipped
        ? finding('number-type', 'unmeasured', 'info', skipped, [describe(answer)])
        : sameRequest(answer)
          ? finding(
              'number-type',
              'loose',
              'warn',
              `"${loose.field}" sent as a string got the first answer: loose comparison.`,
              [describe(answer)],
            )
          : finding('number-type', 'strict', 'pass', 'A number sent as a string is another request.', [
              describe(answer),
            ]),
    );
  }

  // warm-up, burst: the steps so far used one connection; a burst that had to open the
  // others would arrive spread over their handshakes and miss a short race window. So open
  // them first, release each round at one instant, and repeat with fresh keys (a round's
  // sockets are the next round's warm ones).
  const warmed = await prober.warm(o.concurrency);
  for (const answer of warmed) record('warm-up', undefined, encoding, answer);
  const rounds: ProbeAnswer[][] = [];
  for (let round = 0; round < o.rounds; round++) {
    const k = freshKey();
    const answers = await prober.burst(Array.from({ length: o.concurrency }, () => request(k, encoding, valid, true)));
    rounds.push(answers.map((answer) => record('burst', k, encoding, answer)));
  }
  const race = judgeRace(rounds, reliable);
  findings.push(race);
  const inProgressAt = findings.length;

  // missing-key.
  const bare = await send('missing-key', undefined, encoding);
  findings.push(
    isSuccess(bare)
      ? finding('missing-key', 'processed', 'warn', 'A request without a key is processed.', [describe(bare)])
      : finding('missing-key', 'rejected', 'pass', `A request without a key is refused (${bare.status}).`),
  );

  // error-answer: is an error stored under its key, or released?
  const k4 = freshKey();
  const e1 = await send('error-answer', k4, encoding, o.errorBody);
  if (isSuccess(e1)) {
    findings.push(
      finding('error-answer', 'untested', 'info', 'The rejected body got a 2xx: error storage not measured.'),
    );
  } else {
    const e2 = await send('error-answer', k4, encoding, o.errorBody);
    const e3 = await send('error-answer', k4, encoding);
    findings.push(judgeErrorAnswer(e1, e2, e3));
  }

  // in-progress, judged once every status with another meaning is known (placed after race).
  const definitive = new Map<number, string>();
  if (!isSuccess(e1) && e1.status >= 400 && e1.status < 500) definitive.set(e1.status, 'an invalid request');
  if (replay.refused !== undefined) definitive.set(replay.refused, 'a repeat of a finished request');
  if (changed.status >= 400 && changed.status < 500 && ![408, 409, 429].includes(changed.status))
    definitive.set(changed.status, 'a key reused with another body');
  const inProgress = judgeInProgress(rounds.flat(), {
    duplicated: race.severity === 'fail',
    slowed: o.slow !== undefined,
    definitive,
  });
  findings.splice(inProgressAt, 0, inProgress.finding);

  if (o.origin) {
    const names = [o.profile.header, 'Content-Type', ...o.headers.map(([name]) => name)];
    const preflight = await prober.preflight(o.method, names);
    requests.push({ step: 'cors', key: 'none', status: preflight.status });
    findings.push(judgeCors(o.origin, names, preflight, [again, ...rounds.flat()], replay.marker?.header));
  }

  const published = [...first.headers].find(([name]) => /idempotency.*(ttl|expir|retention)|retention/i.test(name));
  findings.push(
    published
      ? finding('retention', 'unpublished', 'info', `The server sends ${published[0]}: ${published[1]}.`)
      : finding('retention', 'unpublished', 'info', 'Retention is not on the wire (the draft has no header for it).'),
  );

  const changes: ProfileChanges = { name: 'checked' };
  if ((encoding === 'bare') !== sendsBare(o.profile)) changes.keyEncoding = encoding === 'bare' ? 'bare' : 'sf-string';
  if (replay.replay !== undefined) changes.replay = replay.replay;
  if (mismatch.status !== undefined) changes.mismatchStatuses = [mismatch.status];
  if (inProgress.inProgressStatus !== undefined) changes.inProgressStatuses = [inProgress.inProgressStatus];
  return {
    ...report(),
    suggestion: { base: o.profileName, changes, profile: profileVariant(o.profile, changes) },
  };
}
