/** Turning the answers of one step into findings and profile changes. */
import type { Profile } from '../profiles/profiles.js';
import type { ProfileChanges } from '../profiles/variants.js';
import { type Finding, finding } from './findings.js';
import { identityOf, isSuccess, type ProbeAnswer, replayMarker, sameBody } from './probe.js';

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
  if (isSuccess(again) && reliable && identityOf(again) !== identityOf(first)) {
    findings.push(finding('replay', 'reran', 'fail', 'The same key and body ran again: a second resource.', evidence));
    return { findings, marker: undefined, replay: undefined, refused: undefined };
  }
  if (!isSuccess(again)) {
    const refused = again.status >= 400 && again.status < 500 && again.status !== 408 && again.status !== 429;
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

/** The burst's rounds: in how many did one key make more than one resource? */
export function judgeRace(rounds: readonly ProbeAnswer[][], reliable: boolean): Finding {
  const size = rounds[0]?.length ?? 0;
  const statuses = (round: readonly ProbeAnswer[]) => round.map((answer) => answer.status || 'no answer').join(', ');
  const created = rounds.map((round) => new Set(round.filter(isSuccess).map((answer) => identityOf(answer))));
  const doubled = created.flatMap((ids, i) => (ids.size > 1 ? [i] : []));
  const of = `${rounds.length === 1 ? 'one round' : `${rounds.length} rounds`} of ${size} simultaneous first requests`;
  if (doubled.length > 0 && reliable)
    return finding(
      'race',
      'several',
      'fail',
      `In ${doubled.length} of ${rounds.length} rounds, ${size} simultaneous first requests with one key made more than one resource: a duplicate effect.`,
      doubled.map(
        (i) =>
          `round ${i + 1}: ${created[i]!.size} resources (${[...created[i]!].join(', ')}); statuses ${statuses(rounds[i]!)}`,
      ),
    );
  if (created.every((ids) => ids.size >= 1))
    return finding(
      'race',
      'one',
      reliable ? 'pass' : 'warn',
      `Each of ${of} made one resource.`,
      rounds.map((round, i) => `round ${i + 1}: statuses ${statuses(round)}`),
    );
  return finding(
    'race',
    'one',
    'warn',
    `Not measured: in a round of ${size} simultaneous first requests none succeeded.`,
    rounds.map((round, i) => `round ${i + 1}: statuses ${statuses(round)}`),
  );
}

export interface InProgressContext {
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

export function judgeErrorAnswer(e1: ProbeAnswer, e2: ProbeAnswer, e3: ProbeAnswer): Finding {
  const evidence = [
    `invalid → ${describe(e1)}`,
    `again → ${describe(e2)}${replayMarker(e1, e2) ? ' (marked as a replay)' : ''}`,
    `valid, same key → ${describe(e3)}`,
  ];
  return isSuccess(e3)
    ? finding('error-answer', 'released', 'info', `A ${e1.status} is not stored: the key is free again.`, evidence)
    : finding('error-answer', 'stored', 'info', `A ${e1.status} is stored: the key stays bound to it.`, evidence);
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
