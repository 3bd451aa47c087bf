/** Turning the answers of one step into findings and profile changes. */
import type { Profile } from '../profiles/profiles.js';
import type { ProfileChanges } from '../profiles/variants.js';
import { type Finding, finding } from './findings.js';
import { identityOf, isSuccess, isTransient, type ProbeAnswer, replayMarker, sameBody } from './probe.js';

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** A short description of an answer's body: its id, its problem title, its error code. */
export function shape(answer: ProbeAnswer): string {
  const type = answer.headers.get('content-type')?.split(';')[0]?.trim() ?? '';
  const kind = type.endsWith('problem+json') ? 'problem+json' : type.endsWith('json') ? 'json' : type || 'no body';
  const body = answer.body;
  if (!isObject(body)) return answer.text === '' ? kind : `${kind} ${JSON.stringify(answer.text.slice(0, 60))}`;
  const error = isObject(body.error) ? body.error : body;
  const label = [error.title, error.code, error.type, error.message].find((v) => typeof v === 'string');
  const id = identityOf(answer);
  if (label !== undefined && !isSuccess(answer)) return `${kind} ${JSON.stringify(label)}`;
  return id?.startsWith('id ') ? `${kind} ${id}` : kind;
}

/** `201 json id pay_1` / `400 problem+json "Idempotency-Key is missing"` / `no answer (…)`. */
export const describe = (answer: ProbeAnswer): string =>
  answer.status === 0 ? `no answer (${answer.error})` : `${answer.status} ${shape(answer)}`;

const asServerAnswer = (answer: ProbeAnswer) => ({ status: answer.status, headers: answer.headers, body: answer.body });

/** The replay step: the first key and body again. Judges the marker only when there was a replay to read. */
export function judgeReplay(first: ProbeAnswer, again: ProbeAnswer, reliable: boolean, profile: Profile) {
  const findings: Finding[] = [];
  const evidence = [`first → ${describe(first)}`, `again → ${describe(again)}`];
  const none = { marker: undefined, replay: undefined, refused: undefined };
  if (isSuccess(again) && !reliable) {
    findings.push(
      finding(
        'replay',
        'unmeasured',
        'unmeasured',
        'Not measured: answers carry no id, no Location and equal bodies, so a replay cannot be told from a second run.',
        evidence,
        'Answer with the id of what was created (a field `id`, or a Location header), then run again.',
      ),
    );
    return { findings, ...none };
  }
  if (isSuccess(again) && identityOf(again) !== identityOf(first)) {
    findings.push(finding('replay', 'reran', 'fail', 'The same key and body ran again: a second resource.', evidence));
    return { findings, ...none };
  }
  if (isTransient(again)) {
    // Twice no word from the server about the key (the check sent it once more).
    findings.push(
      finding(
        'replay',
        'unmeasured',
        'unmeasured',
        `Not measured: the repeat of the key got ${describe(again)} twice, not the server's word about the key.`,
        evidence,
        'Run the check again when the server answers the repeat of a key (a replay or a refusal).',
      ),
      finding('replay-marker', 'unmeasured', 'info', `Not measured: the repeat got ${describe(again)}.`),
    );
    return { findings, ...none };
  }
  if (!isSuccess(again)) {
    const refused = again.status >= 400 && again.status < 500;
    findings.push(
      refused
        ? finding(
            'replay',
            'refused',
            'warn',
            `The same key and body are refused (${again.status}): the server never replays.`,
            evidence,
          )
        : finding('replay', 'differs', 'warn', 'The same key and body get another answer.', evidence),
      finding(
        'replay-marker',
        'unmeasured',
        'info',
        `Not measured: the repeat got ${describe(again)}, not a replay to read a marker from.`,
      ),
    );
    return { findings, marker: undefined, replay: undefined, refused: refused ? again.status : undefined };
  }
  const same = again.status === first.status && sameBody(again) === sameBody(first);
  findings.push(
    same
      ? finding('replay', 'same', 'pass', `The same key and body get the first answer again (${again.status}).`)
      : finding('replay', 'differs', 'warn', 'The same key and body get another answer.', evidence),
  );
  const marker = replayMarker(first, again);
  let replay: ProfileChanges['replay'];
  const known = marker && profile.replayHeaders.some((name) => name.toLowerCase() === marker.header.toLowerCase());
  if (marker && marker.value.trim().toLowerCase() === 'true') {
    if (!known) replay = marker.header;
    findings.push(
      finding(
        'replay-marker',
        known ? 'marked' : 'other',
        known ? 'pass' : 'info',
        `Replays are marked ${marker.header}: ${marker.value}.`,
      ),
    );
  } else if (marker) {
    replay = marker;
    findings.push(finding('replay-marker', 'other', 'info', `Replays are marked ${marker.header}: ${marker.value}.`));
  } else {
    if (profile.replayHeaders.length > 0) replay = 'none';
    findings.push(
      finding('replay-marker', 'none', 'warn', 'Replays carry no marker: they look like fresh answers.', [
        `headers added on the replay: none`,
      ]),
    );
  }
  return { findings, marker, replay, refused: undefined };
}

export function judgeMismatch(first: ProbeAnswer, changed: ProbeAnswer, reliable: boolean, profile: Profile) {
  const evidence = [describe(changed)];
  if (isSuccess(changed)) {
    const replayed = !reliable || identityOf(changed) === identityOf(first);
    return {
      status: undefined,
      finding: replayed
        ? finding('mismatch', 'replayed', 'warn', 'Another body under the same key got the first answer.', evidence)
        : finding('mismatch', 'rerun', 'warn', 'Another body under the same key ran as a new request.', evidence),
    };
  }
  const status = changed.status;
  if (profile.classify(asServerAnswer(changed)) === 'mismatch')
    return {
      status: undefined,
      finding: finding('mismatch', 'ietf', 'pass', `Another body under the same key is a ${status}.`, evidence),
    };
  if (status >= 400 && status < 500 && status !== 400 && status !== 409 && status !== 429)
    return {
      status,
      finding: finding(
        'mismatch',
        'mapped',
        'info',
        `Another body under the same key is a ${status}, not 422.`,
        evidence,
      ),
    };
  return {
    status: undefined,
    finding: finding(
      'mismatch',
      'ambiguous',
      status >= 500 || status === 0 ? 'warn' : 'info',
      `Another body under the same key is a ${status || 'network error'}: it cannot be told from other errors.`,
      evidence,
    ),
  };
}

/** What one burst round shows: how many resources, and how many repeats overlapped the first at the server. */
export interface RoundResult {
  answers: ProbeAnswer[];
  /** Resources made (identities of the 2xx answers). */
  created: Set<string | undefined>;
  /** Repeats the server answered while the first request with the key still ran. */
  overlapping: number;
}

export interface OverlapContext {
  profile: Profile;
  /** The slowest answer to the warm-up (ms): an answer earlier than the first success by more was given before it finished. */
  transit: number;
  /** Statuses the check saw mean something else (a refused repeat): they count only by their timing. */
  ambiguous: ReadonlySet<number>;
}

/**
 * One round. A repeat overlapped the first request with the key at the server when the
 * server says so: it made another resource, it was answered "in progress" (409, or the
 * profile's status), or it was refused (a 4xx) and that answer came back earlier than the
 * first success by more than a round trip, so the server gave it while the first still ran.
 * A replayed success does not count: it may have come after the first finished.
 */
export function judgeRound(answers: ProbeAnswer[], context: OverlapContext): RoundResult {
  const successes = answers.filter(isSuccess);
  const created = new Set(successes.map((answer) => identityOf(answer)));
  if (successes.length === 0) return { answers, created, overlapping: 0 };
  const finished = Math.min(...successes.map((answer) => answer.ms));
  let overlapping = created.size - 1;
  for (const answer of answers) {
    if (isSuccess(answer) || isTransient(answer) || answer.status < 400) continue;
    const word = asServerAnswer(answer);
    const inProgress = context.profile.classify(word) === 'in_progress' && !context.ambiguous.has(answer.status);
    if (inProgress || answer.ms + context.transit < finished) overlapping += 1;
  }
  return { answers, created, overlapping };
}

/** How the race step was powered, as the report states it. */
export interface RacePower {
  /** Rounds sent (each a fresh key). */
  rounds: number;
  /** Rounds in which the requests overlapped at the server. */
  overlapped: number;
  /** Overlapping rounds wanted (`--rounds`). */
  wanted: number;
  /** Requests per round. */
  burst: number;
  /** Repeats (all requests but one per round) that overlapped the first at the server. */
  overlappingRepeats: number;
  repeats: number;
}

export interface RaceContext {
  reliable: boolean;
  wanted: number;
  /** The body holds `{{key}}` (each key its own body). */
  templated: boolean;
  slowed: boolean;
}

const TEMPLATE_HINT =
  'If the server refuses a body that another key already sent, give each key its own body with a template: --json \'{"amount":1000,"ref":"{{key}}"}\' ({{key}} becomes a value unique to each key).';

/** The burst's rounds: in any of them, did one key make more than one resource? And was the race measured? */
export function judgeRace(
  rounds: readonly RoundResult[],
  context: RaceContext,
): { finding: Finding; power: RacePower } {
  const size = rounds[0]?.answers.length ?? 0;
  const overlapped = rounds.filter((round) => round.overlapping > 0).length;
  const power: RacePower = {
    rounds: rounds.length,
    overlapped,
    wanted: context.wanted,
    burst: size,
    overlappingRepeats: rounds.reduce((sum, round) => sum + round.overlapping, 0),
    repeats: rounds.length * Math.max(size - 1, 0),
  };
  const powerLine = `power: ${overlapped} of ${rounds.length} rounds × ${size} requests overlapped at the server (${power.overlappingRepeats} of ${power.repeats} repeats met the first request with their key there: told it was in progress, refused before it finished, or run beside it; ${context.wanted} overlapping rounds wanted)`;
  const statuses = (round: RoundResult) => round.answers.map((answer) => answer.status || 'no answer').join(', ');
  const lines = rounds.map((round, i) => `round ${i + 1}: statuses ${statuses(round)}`);
  const doubled = rounds.flatMap((round, i) => (round.created.size > 1 ? [i] : []));
  if (doubled.length > 0 && context.reliable)
    return {
      power,
      finding: finding(
        'race',
        'several',
        'fail',
        `In ${doubled.length} of ${rounds.length} rounds, ${size} simultaneous first requests with one key made more than one resource: a duplicate effect.`,
        [
          ...doubled.map(
            (i) =>
              `round ${i + 1}: ${rounds[i]!.created.size} resources (${[...rounds[i]!.created].join(', ')}); statuses ${statuses(rounds[i]!)}`,
          ),
          powerLine,
        ],
      ),
    };
  const unmeasured = (why: string, remedy: string) => ({
    power,
    finding: finding('race', 'unmeasured', 'unmeasured', `Not measured: ${why}`, [...lines, powerLine], remedy),
  });
  if (!context.reliable)
    return unmeasured(
      'answers carry no id, no Location and equal bodies, so a second resource cannot be seen.',
      'Answer with the id of what was created (a field `id`, or a Location header), then run again.',
    );
  const refused = rounds.findIndex((round) => round.created.size === 0);
  if (refused >= 0)
    return unmeasured(
      `in round ${refused + 1}, none of ${size} first requests with a fresh key succeeded.`,
      context.templated
        ? 'Make the body valid for any fresh key (each key gets its own body from the template), then run again.'
        : TEMPLATE_HINT,
    );
  if (overlapped < context.wanted)
    return unmeasured(
      `in ${rounds.length} rounds of ${size} simultaneous first requests, the requests overlapped at the server in ${overlapped} (${context.wanted} wanted); the others got the stored answer, which may come after the first finished.`,
      `${context.slowed ? 'Slow the effect more (a larger --slow value)' : "Pass --slow 'Name: ms' with a header that makes the server's effect slow (a test hook)"}, or raise --max-rounds, so that requests with one key are at the server together.`,
    );
  return {
    power,
    finding: finding(
      'race',
      'one',
      'pass',
      `One key made one resource in each of ${overlapped} rounds × ${size} simultaneous first requests that overlapped at the server (${power.overlappingRepeats} of ${power.repeats} repeats met the first request with their key there; ${rounds.length} rounds sent).`,
      [...lines, powerLine],
    ),
  };
}

export interface InProgressContext {
  /** Some round of the burst got a 2xx (else its statuses are refusals of something else). */
  measured: boolean;
  /** A round made more than one resource (and identities are reliable). */
  duplicated: boolean;
  slowed: boolean;
  /**
   * Statuses the check saw mean something else, and what: the mismatch, a refused
   * repeat, a rejected body. None of them is taken for "in progress".
   */
  definitive: ReadonlyMap<number, string>;
}

/** How the burst's overlapping requests were answered, and the in-progress status to map, if one can be. */
export function judgeInProgress(burst: readonly ProbeAnswer[], context: InProgressContext) {
  if (!context.measured)
    return {
      inProgressStatus: undefined,
      finding: finding('in-progress', 'refused', 'info', 'Not measured: no round of the burst got a 2xx.'),
    };
  const statuses = burst.map((answer) => answer.status || 'no answer').join(', ');
  const conflicts = burst.filter((answer) => answer.status === 409);
  const others = burst.filter((answer) => !isSuccess(answer) && answer.status !== 409);
  if (conflicts.length > 0) {
    const hints = [...new Set(conflicts.map((answer) => answer.headers.get('retry-after') ?? 'none'))];
    return {
      inProgressStatus: undefined,
      finding: hints.includes('none')
        ? finding('in-progress', 'noRetryAfter', 'info', 'A request in progress is a 409 without Retry-After.')
        : finding(
            'in-progress',
            'ietf',
            'pass',
            `A request in progress is a 409 with Retry-After: ${hints.join(', ')}.`,
          ),
    };
  }
  if (others.length > 0) {
    const status = others[0]!.status;
    const evidence = [`statuses: ${statuses}`, describe(others[0]!)];
    const meaning = context.definitive.get(status);
    if (meaning !== undefined)
      return {
        inProgressStatus: undefined,
        finding: finding(
          'in-progress',
          'ambiguous',
          'warn',
          `A request in progress is answered ${status}, as ${meaning} is: the two cannot be told apart.`,
          evidence,
        ),
      };
    const mapped = status >= 400 && status < 500 && status !== 408 && status !== 429;
    return {
      inProgressStatus: mapped ? status : undefined,
      finding: finding(
        'in-progress',
        mapped ? 'mapped' : 'retryable',
        mapped ? 'info' : 'warn',
        `A request in progress is answered ${status || 'with no answer'}, not 409.`,
        evidence,
      ),
    };
  }
  if (context.duplicated)
    return {
      inProgressStatus: undefined,
      finding: finding('in-progress', 'none', 'warn', 'No overlapping request was told to wait: each one ran.', [
        `statuses: ${statuses}`,
      ]),
    };
  return {
    inProgressStatus: undefined,
    finding: context.slowed
      ? finding('in-progress', 'waits', 'info', 'Every request of the slowed burst got the answer: the server waits.')
      : finding('in-progress', 'unseen', 'info', 'No request overlapped another (no 409): not measured.'),
  };
}

/**
 * Error storage: the rejected body twice, then the valid one under that key. The valid body
 * refused as the error was (a replay) or as another body under a used key is (`mismatch`,
 * the status the `other-body` step got) means the key stays bound; refused with any other
 * status, it was refused for something else (the control failed): nothing is concluded.
 */
export function judgeErrorAnswer(
  e1: ProbeAnswer,
  e2: ProbeAnswer,
  e3: ProbeAnswer,
  mismatch: number,
  remedy?: string,
): Finding {
  const evidence = [
    `invalid → ${describe(e1)}`,
    `again → ${describe(e2)}${replayMarker(e1, e2) ? ' (marked as a replay)' : ''}`,
    `valid, same key → ${describe(e3)}`,
  ];
  if (isSuccess(e3))
    return finding(
      'error-answer',
      'released',
      'info',
      `A ${e1.status} is not stored: the key is free again.`,
      evidence,
    );
  if (e3.status === e1.status || e3.status === mismatch)
    return finding('error-answer', 'stored', 'info', `A ${e1.status} is stored: the key stays bound to it.`, evidence);
  return finding(
    'error-answer',
    'unmeasured',
    'info',
    `Not measured: the valid body under that key got ${describe(e3)}, neither the stored ${e1.status} nor a 2xx.`,
    evidence,
    remedy,
  );
}

const listed = (value: string | null) => (value ?? '').split(',').map((item) => item.trim().toLowerCase());

export function judgeCors(
  origin: string,
  names: readonly string[],
  preflight: ProbeAnswer,
  answers: readonly ProbeAnswer[],
  replayHeader: string | undefined,
): Finding {
  const allowOrigin = preflight.headers.get('access-control-allow-origin');
  const allowed = listed(preflight.headers.get('access-control-allow-headers'));
  const missing = names.filter(
    (name) =>
      !allowed.includes(name.toLowerCase()) && !(allowed.includes('*') && name.toLowerCase() !== 'authorization'),
  );
  const originOk = allowOrigin === '*' || allowOrigin === origin;
  if (preflight.status >= 300 || !originOk || missing.length > 0)
    return finding('cors', 'blocked', 'warn', `A browser on ${origin} cannot send this request.`, [
      `preflight → ${preflight.status || preflight.error}, Allow-Origin: ${allowOrigin ?? 'none'}`,
      ...(missing.length > 0 ? [`headers not allowed: ${missing.join(', ')}`] : []),
    ]);
  const hidden = new Set<string>();
  for (const answer of answers) {
    const exposed = listed(answer.headers.get('access-control-expose-headers'));
    const wanted = [answer.headers.has('retry-after') ? 'Retry-After' : undefined, replayHeader].filter(
      (name): name is string => name !== undefined && answer.headers.has(name),
    );
    for (const name of wanted) if (!exposed.includes(name.toLowerCase()) && !exposed.includes('*')) hidden.add(name);
  }
  return hidden.size > 0
    ? finding('cors', 'hidden', 'warn', `Browsers on ${origin} cannot read ${[...hidden].join(', ')}.`)
    : finding('cors', 'ok', 'pass', `A browser on ${origin} can send the key and read the headers oncely uses.`);
}
