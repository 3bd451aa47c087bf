/**
 * The documented request sequence of `oncely check`, as data: `--dry-run` prints it, the
 * cap is checked against its maximum before anything is sent, and the README lists it.
 * Every step uses fresh keys of its own unless it says "the first key".
 */

export type StepId =
  | 'key-quoted'
  | 'key-bare'
  | 'key-same'
  | 'replay'
  | 'key-length'
  | 'other-body'
  | 'key-order'
  | 'number-type'
  | 'warm-up'
  | 'burst'
  | 'missing-key'
  | 'error-answer'
  | 'cors';

export interface PlanStep {
  id: StepId;
  /** Most requests the step sends. */
  requests: number;
  /** Most of them that can create a resource (a real effect). */
  effects: number;
  what: string;
}

/** Key lengths tried by `key-length`, shortest first; it stops at the first rejected one. */
export const KEY_LENGTH_LADDER = [64, 255, 256, 1024] as const;

export interface PlanInput {
  concurrency: number;
  /** Rounds that must overlap at the server. */
  rounds: number;
  /** Most rounds sent. */
  maxRounds: number;
  origin: string | undefined;
  /** The body has two or more fields (key order can be tested). */
  reorderable: boolean;
  /** The body has a number field (number type can be tested). */
  hasNumber: boolean;
}

export function checkPlan(input: PlanInput): PlanStep[] {
  const steps: PlanStep[] = [
    {
      id: 'key-quoted',
      requests: 2,
      effects: 2,
      what: 'fresh key as a quoted Structured Field string ("k"), once more after a transient answer',
    },
    {
      id: 'key-bare',
      requests: 4,
      effects: 4,
      what: 'fresh key sent bare (k), likewise; two fresh keys must give two resources; when only one encoding is accepted, a fresh key in it again (the control: was the refusal about the encoding?)',
    },
    {
      id: 'key-same',
      requests: 1,
      effects: 1,
      what: 'the quoted key again, sent bare: the same key (replay) or another (new resource)?',
    },
    {
      id: 'replay',
      requests: 2,
      effects: 2,
      what: 'the first key and body again (once more after a transient answer): same status and body? which header marks the replay?',
    },
    {
      id: 'key-length',
      requests: KEY_LENGTH_LADDER.length + 1,
      effects: KEY_LENGTH_LADDER.length + 1,
      what: `fresh keys of ${KEY_LENGTH_LADDER.join(', ')} characters, stopping at the first rejected; then a fresh key of 36 (the control)`,
    },
    {
      id: 'other-body',
      requests: 1,
      effects: 1,
      what: 'the first key with another body: which status and error shape?',
    },
  ];
  if (input.reorderable)
    steps.push({
      id: 'key-order',
      requests: 2,
      effects: 2,
      what: 'the first key, the same body with its fields in reverse order (once more after a transient answer): the same request?',
    });
  if (input.hasNumber)
    steps.push({
      id: 'number-type',
      requests: 2,
      effects: 2,
      what: 'the first key, a number sent as a string ("1000" for 1000), once more after a transient answer: loose comparison?',
    });
  steps.push(
    {
      id: 'warm-up',
      requests: input.concurrency,
      effects: 0,
      what: `simultaneous, no key, no effect: opens as many keep-alive connections as the burst uses`,
    },
    {
      id: 'burst',
      requests: input.concurrency * input.maxRounds,
      effects: input.concurrency * input.maxRounds,
      what: `${input.concurrency} first requests with one fresh key a round (and --slow), released at one instant, until ${input.rounds} rounds overlapped at the server (at most ${input.maxRounds}): one resource each, 409 + Retry-After?`,
    },
    { id: 'missing-key', requests: 1, effects: 1, what: 'no key at all: 400, or processed?' },
    {
      id: 'error-answer',
      requests: 3,
      effects: 3,
      what: 'a fresh key with --error-json (an invalid body), again, then the valid body: error stored or released?',
    },
  );
  if (input.origin)
    steps.push({
      id: 'cors',
      requests: 1,
      effects: 0,
      what: `preflight from ${input.origin}: key header allowed? (every request carries Origin; exposed headers are read from the answers)`,
    });
  return steps;
}

export const planTotals = (steps: readonly PlanStep[]) => ({
  requests: steps.reduce((sum, step) => sum + step.requests, 0),
  effects: steps.reduce((sum, step) => sum + step.effects, 0),
});
