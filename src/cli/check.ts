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
  judgeRound,
  type RacePower,
  type RoundResult,
} from './judge.js';
import { identityOf, isSuccess, isTransient, type ProbeAnswer, type ProbeRequest, Prober } from './probe.js';

export type { CheckOptions } from './check-options.js';

/** One request of the check, as the report lists it. Keys are named K1, K2… (never sent anywhere else). */
export interface CheckRequest {
  step: StepId;
  key: string;
  status: number;
  note?: string;
}

/**
 * - `passed`: every finding was measured and none can cause a second effect (exit 0).
 * - `failed`: a finding can cause a second effect (exit 1).
 * - `inconclusive`: none was found, but the race or the replay (what decides a second
 *   effect) was not measured; the findings' `remedy` says what to change (exit 3).
 */
export type Verdict = 'passed' | 'failed' | 'inconclusive';

export interface CheckReport {
  url: string;
  method: string;
  plan: PlanStep[];
  requests: CheckRequest[];
  findings: Finding[];
  verdict: Verdict;
  /** True unless the verdict is `passed` (a second effect found, or what decides one not measured). */
  failed: boolean;
  /** How much the race step measured: overlapping rounds × burst size. Absent when no burst was sent. */
  power?: RacePower;
  /** The profile to use, as data: `base` plus `changes`. Absent when nothing was measured. */
  suggestion?: { base: string; changes: ProfileChanges; profile: Profile };
}

const freshKey = (length = 36): string => {
  let key = crypto.randomUUID();
  while (key.length < length) key += `-${crypto.randomUUID()}`;
  return key.slice(0, length);
};

/** What `{{key}}` becomes in a key's body: its first UUID (every key starts with one). */
const tokenOf = (key: string): string => key.slice(0, 36);

/** Whether `profile` sends the key bare. */
const sendsBare = (profile: Profile): boolean => profile.encodeKey('k') === 'k';

/** The plan for these options (what `--dry-run` prints). */
export function planFor(options: CheckOptions): { plan: PlanStep[]; requests: number; effects: number } {
  const resolved = resolveCheckOptions(options);
  const plan = planOf(resolved);
  const totals = planTotals(plan);
  if (totals.requests > resolved.maxRequests)
    throw new InvalidArgumentError(
      `The check needs up to ${totals.requests} requests but --max-requests is ${resolved.maxRequests}: raise it, or lower --concurrency or --max-rounds.`,
    );
  return { plan, ...totals };
}

const planOf = (o: ResolvedCheckOptions) => {
  const body = o.bodyFor(crypto.randomUUID());
  return checkPlan({
    concurrency: o.concurrency,
    rounds: o.rounds,
    maxRounds: o.maxRounds,
    origin: o.origin,
    reorderable: body.reordered !== undefined,
    hasNumber: body.loose !== undefined,
  });
};

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
  const bodies = (key: string) => o.bodyFor(tokenOf(key));
  const { contentType } = o.bodyFor('');
  const request = (key: string | undefined, encoding: 'quoted' | 'bare', body: string, slow = false): ProbeRequest => ({
    method: o.method,
    key: key === undefined ? undefined : encoding === 'quoted' ? `"${key}"` : key,
    body,
    contentType,
    ...(slow && o.slow ? { extraHeaders: [o.slow] } : {}),
  });
  const record = (step: StepId, key: string | undefined, encoding: 'quoted' | 'bare', answer: ProbeAnswer) => {
    const label =
      key === undefined ? 'none' : `${alias(key)} ${encoding}${key.length === 36 ? '' : ` (${key.length})`}`;
    requests.push({ step, key: label, status: answer.status, ...(answer.error ? { note: answer.error } : {}) });
    return answer;
  };
  /** One request; the body is the key's own valid body unless given. */
  const send = async (step: StepId, key: string | undefined, encoding: 'quoted' | 'bare', body?: string) =>
    record(step, key, encoding, await prober.send(request(key, encoding, body ?? bodies(key ?? freshKey()).text)));
  // A transient answer (5xx, 408, 429, no answer) says nothing about the key: once more, same key.
  const settled = async (step: StepId, key: string, encoding: 'quoted' | 'bare', body?: string) => {
    const answer = await send(step, key, encoding, body);
    return isTransient(answer) ? send(step, key, encoding, body) : answer;
  };
  let power: RacePower | undefined;
  const report = (): CheckReport => {
    const verdict: Verdict = findings.some((f) => f.severity === 'fail')
      ? 'failed'
      : findings.some((f) => f.severity === 'unmeasured')
        ? 'inconclusive'
        : 'passed';
    return {
      url: o.url,
      method: o.method,
      plan,
      requests,
      findings,
      verdict,
      failed: verdict !== 'passed',
      ...(power ? { power } : {}),
    };
  };
  const templateHint = o.templated
    ? undefined
    : 'If the server refuses a body another key already sent, give each key its own body: a template such as --json \'{"amount":1000,"ref":"{{key}}"}\'.';

  // key-quoted, key-bare: which encodings get a 2xx; two fresh keys must make two resources.
  const k1 = freshKey();
  const a1 = await settled('key-quoted', k1, 'quoted');
  const k2 = freshKey();
  const a2 = await settled('key-bare', k2, 'bare');
  const quotedOk = isSuccess(a1);
  const bareOk = isSuccess(a2);
  if (!quotedOk && !bareOk) {
    findings.push(
      finding(
        'reachable',
        'unmeasured',
        'unmeasured',
        'No valid request got a 2xx: nothing else was measured.',
        [`quoted key → ${describe(a1)}`, `bare key → ${describe(a2)}`],
        'Check the URL, the body (--json) and the headers (--header, e.g. Authorization), then run again.',
      ),
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
    // The control: a fresh key in the accepted encoding, with its own body. Refused too, the
    // refusal was about something else (the body, the rate), not about the encoding.
    encoding = quotedOk ? 'quoted' : 'bare';
    const refused = quotedOk ? a2 : a1;
    const control = await settled('key-bare', freshKey(), encoding);
    const evidence = [
      `${quotedOk ? 'bare' : 'quoted'} key → ${describe(refused)}`,
      `control, a fresh ${encoding} key → ${describe(control)}`,
    ];
    findings.push(
      !isSuccess(control)
        ? finding(
            'key-encoding',
            'unmeasured',
            'info',
            `Not measured: a fresh ${encoding} key was refused too, so the refusal of the ${quotedOk ? 'bare' : 'quoted'} key is not about its encoding.`,
            evidence,
            templateHint,
          )
        : quotedOk
          ? finding('key-encoding', 'quotedOnly', 'pass', 'Only the quoted Structured Field key is accepted.', evidence)
          : finding('key-encoding', 'bareOnly', 'info', 'Only a bare key is accepted.', evidence),
    );
  }
  const key = encoding === 'quoted' ? k1 : k2;
  const first = encoding === 'quoted' ? a1 : a2;

  // replay: the first key and body again.
  const again = await settled('replay', key, encoding);
  const replay = judgeReplay(first, again, reliable, o.profile);
  findings.push(...replay.findings);

  // key-length: the longest key of the ladder that gets a 2xx; a refusal counts only when a
  // fresh key of 36 characters, sent next, is accepted (the control).
  let longest = 36;
  let rejected: ProbeAnswer | undefined;
  for (const length of KEY_LENGTH_LADDER) {
    const answer = await send('key-length', freshKey(length), encoding);
    if (!isSuccess(answer)) {
      rejected = answer;
      break;
    }
    longest = length;
  }
  const limit = KEY_LENGTH_LADDER.find((length) => length > longest);
  const control = rejected && (await send('key-length', freshKey(), encoding));
  findings.push(
    rejected && control && !isSuccess(control)
      ? finding(
          'key-length',
          'unmeasured',
          'info',
          `Not measured: a key of ${limit} characters was refused, and so was a fresh key of 36 characters (the control): the refusal is not about the length.`,
          [`${limit} characters → ${describe(rejected)}`, `control, 36 characters → ${describe(control)}`],
          templateHint,
        )
      : finding(
          'key-length',
          longest >= 255 ? 'ok' : 'short',
          longest >= 255 ? 'pass' : longest >= 64 ? 'info' : 'warn',
          `Keys of ${longest} characters are accepted${rejected ? `; ${limit} characters are not` : ` (the longest tried)`}.`,
          rejected ? [`${limit} characters → ${describe(rejected)}`] : undefined,
        ),
  );

  // other-body, key-order, number-type: the first key with other bodies.
  const firstBody = bodies(key);
  const changed = await send('other-body', key, encoding, firstBody.other);
  const mismatch = judgeMismatch(first, changed, reliable, o.profile);
  findings.push(mismatch.finding);
  const sameRequest = (answer: ProbeAnswer) =>
    isSuccess(answer) && (!reliable || identityOf(answer) === identityOf(first));
  // Judged only from the server's word about the key: a transient answer (sent twice) is
  // not one, and a server that refuses every repeat gives these the same refusal.
  const unmeasured = (answer: ProbeAnswer) =>
    isTransient(answer)
      ? `Not measured: the repeat got ${describe(answer)} twice, not the server's word about the key.`
      : replay.refused !== undefined && answer.status === replay.refused
        ? `Not measured: the repeat of the key with the same body was refused (${replay.refused}) too.`
        : undefined;
  const reordered = firstBody.reordered;
  if (reordered !== undefined) {
    const answer = await settled('key-order', key, encoding, reordered);
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
  const loose = firstBody.loose;
  if (loose !== undefined) {
    const answer = await settled('number-type', key, encoding, loose.text);
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
  // sockets are the next round's warm ones) until `rounds` rounds overlapped at the server,
  // a round made two resources, a round had no success, or `maxRounds` were sent.
  const warmed = await prober.warm(o.concurrency);
  for (const answer of warmed) record('warm-up', undefined, encoding, answer);
  const answered = warmed.filter((answer) => answer.status !== 0);
  const overlap = {
    profile: o.profile,
    transit: answered.length > 0 ? Math.max(...answered.map((answer) => answer.ms)) : Number.POSITIVE_INFINITY,
    ambiguous: new Set(replay.refused === undefined ? [] : [replay.refused]),
  };
  const rounds: RoundResult[] = [];
  let overlapped = 0;
  while (rounds.length < o.maxRounds && overlapped < o.rounds) {
    const k = freshKey();
    const body = bodies(k).text;
    const answers = await prober.burst(Array.from({ length: o.concurrency }, () => request(k, encoding, body, true)));
    for (const answer of answers) record('burst', k, encoding, answer);
    const round = judgeRound(answers, overlap);
    rounds.push(round);
    if (round.created.size !== 1) break;
    if (round.overlapping > 0) overlapped += 1;
  }
  const race = judgeRace(rounds, { reliable, wanted: o.rounds, templated: o.templated, slowed: o.slow !== undefined });
  power = race.power;
  findings.push(race.finding);
  const inProgressAt = findings.length;
  // A round with no success was refused as a whole (a body another key sent, a rate limit):
  // its statuses say nothing about a request in progress.
  const burst = rounds.filter((round) => round.created.size > 0).flatMap((round) => round.answers);

  // missing-key.
  const bare = await send('missing-key', undefined, encoding);
  findings.push(
    isSuccess(bare)
      ? finding('missing-key', 'processed', 'warn', 'A request without a key is processed.', [describe(bare)])
      : finding('missing-key', 'rejected', 'pass', `A request without a key is refused (${bare.status}).`),
  );

  // error-answer: is an error stored under its key, or released?
  const k4 = freshKey();
  const errorBody = o.errorFor(tokenOf(k4));
  const e1 = await send('error-answer', k4, encoding, errorBody);
  if (isSuccess(e1)) {
    findings.push(
      finding('error-answer', 'untested', 'info', 'The rejected body got a 2xx: error storage not measured.'),
    );
  } else {
    const e2 = await send('error-answer', k4, encoding, errorBody);
    const e3 = await send('error-answer', k4, encoding);
    findings.push(judgeErrorAnswer(e1, e2, e3, changed.status, templateHint));
  }

  // in-progress, judged once every status with another meaning is known (placed after race).
  const definitive = new Map<number, string>();
  if (!isSuccess(e1) && e1.status >= 400 && e1.status < 500) definitive.set(e1.status, 'an invalid request');
  if (replay.refused !== undefined) definitive.set(replay.refused, 'a repeat of a finished request');
  if (changed.status >= 400 && changed.status < 500 && ![408, 409, 429].includes(changed.status))
    definitive.set(changed.status, 'a key reused with another body');
  const inProgress = judgeInProgress(burst, {
    measured: burst.length > 0,
    duplicated: race.finding.severity === 'fail',
    slowed: o.slow !== undefined,
    definitive,
  });
  findings.splice(inProgressAt, 0, inProgress.finding);

  if (o.origin) {
    const names = [o.profile.header, 'Content-Type', ...o.headers.map(([name]) => name)];
    const preflight = await prober.preflight(o.method, names);
    requests.push({ step: 'cors', key: 'none', status: preflight.status });
    findings.push(judgeCors(o.origin, names, preflight, [again, ...burst], replay.marker?.header));
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
