/**
 * Profiles for servers that differ from the draft in the ways `oncely check` measures:
 * a bare key, another mismatch or in-progress status, another replay marker or none.
 * Each is `ietf` with a few fields changed, so a provider stays data.
 */
import type { ServerAnswer } from '../errors.js';
import { ietf, type Outcome, type Profile } from './profiles.js';

/** What a server does differently from the draft, as `oncely check` reports it. */
export interface ProfileChanges {
  /** Name of the resulting profile. @default `${base.name}-variant` */
  name?: string;
  /** `'bare'`: the key goes verbatim (Stripe and most servers); `'sf-string'`: quoted. */
  keyEncoding?: 'sf-string' | 'bare';
  /** Request header carrying the key. @default the base's */
  header?: string;
  /** Statuses that mean "key reused with another request", besides the base's (e.g. 417). */
  mismatchStatuses?: readonly number[];
  /** Statuses that mean "the first request is still running", besides 409 (e.g. 425). */
  inProgressStatuses?: readonly number[];
  /**
   * How a replay is marked: a header whose value is `true` (`'X-Idempotent-Replayed'`),
   * a header with another value (`{ header: 'X-Cache', value: 'HIT' }`), or `'none'`
   * when the server marks nothing (replays then look like fresh answers).
   */
  replay?: string | { header: string; value: string } | 'none';
  /** How long the server keeps a key (ms). @default the base's (24 h) */
  keyTtl?: number;
}

/**
 * `base` with `changes` applied.
 * @example
 * const shop = profileVariant(ietf, { keyEncoding: 'bare', mismatchStatuses: [417], replay: 'none' });
 */
export function profileVariant(base: Profile, changes: ProfileChanges): Profile {
  const mismatch = new Set(changes.mismatchStatuses ?? []);
  const inProgress = new Set(changes.inProgressStatuses ?? []);
  const classify = (answer: ServerAnswer): Outcome => {
    if (mismatch.has(answer.status)) return 'mismatch';
    if (inProgress.has(answer.status)) return 'in_progress';
    return base.classify(answer);
  };
  const profile: Profile = {
    ...base,
    name: changes.name ?? `${base.name}-variant`,
    header: changes.header ?? base.header,
    keyTtl: changes.keyTtl ?? base.keyTtl,
    classify: mismatch.size + inProgress.size === 0 ? base.classify : classify,
  };
  if (changes.keyEncoding === 'bare') profile.encodeKey = (key) => key;
  if (changes.keyEncoding === 'sf-string') profile.encodeKey = ietf.encodeKey;
  const replay = changes.replay;
  if (replay === 'none') profile.replayHeaders = [];
  else if (typeof replay === 'string') profile.replayHeaders = [replay];
  else if (replay) {
    const wanted = replay.value.trim().toLowerCase();
    profile.replayHeaders = [];
    profile.isReplay = ({ headers }) => headers.get(replay.header)?.trim().toLowerCase() === wanted;
  }
  return profile;
}

/**
 * The draft's contract with the key sent bare (`Idempotency-Key: 8e03…`), as most servers
 * read it: they take the header verbatim, so a quoted key would be another key to them.
 */
export const ietfBare: Profile = profileVariant(ietf, { name: 'ietf-bare', keyEncoding: 'bare' });

/**
 * A bare key and no replay marker: replays cannot be told from fresh answers, so
 * `res.replayed` stays false and a stored 5xx is retried until the budget ends.
 */
export const ietfBareUnmarked: Profile = profileVariant(ietf, {
  name: 'ietf-bare-unmarked',
  keyEncoding: 'bare',
  replay: 'none',
});
