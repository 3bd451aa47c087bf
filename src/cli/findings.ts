/**
 * What `oncely check` can find, and for each what oncely does about it and what no
 * client can do. The README's table is this file in prose.
 */

/**
 * - `pass`: as the draft says.
 * - `info`: differs, and the suggested profile or oncely's defaults cover it.
 * - `warn`: differs in a way that can lose information or break another client, not
 *   repeat an effect through oncely.
 * - `fail`: can cause a second effect. Exit 1.
 * - `unmeasured`: a finding that decides a second effect (the race, the replay) could not
 *   be measured; `remedy` says what to change. With no `fail`, the verdict is INCONCLUSIVE (exit 3).
 */
export type Severity = 'pass' | 'info' | 'warn' | 'fail' | 'unmeasured';

export type FindingId =
  | 'reachable'
  | 'key-encoding'
  | 'key-length'
  | 'identity'
  | 'replay'
  | 'replay-marker'
  | 'mismatch'
  | 'key-order'
  | 'number-type'
  | 'in-progress'
  | 'race'
  | 'missing-key'
  | 'error-answer'
  | 'cors'
  | 'retention';

export interface Finding {
  id: FindingId;
  severity: Severity;
  /** What was measured, in one line. */
  result: string;
  /** Statuses, ids, headers: what the result rests on. */
  evidence?: string[];
  /** What oncely does about it (with the suggested profile). */
  oncely: string;
  /** What oncely cannot do about it. */
  cannot?: string;
  /** When it was not measured: what to change so the next run can measure it. */
  remedy?: string;
}

type Notes = { oncely: string; cannot?: string };

/** Per finding: what oncely does, what it cannot. Keyed by id, then by a short outcome name. */
export const NOTES = {
  reachable: {
    unmeasured: {
      oncely: 'Nothing was measured. Check the URL, --json and --header (auth), then run again.',
    },
  },
  'key-encoding': {
    decoded: { oncely: 'Either encoding works; the profile keeps the quoted form of the draft.' },
    verbatim: {
      oncely: 'The profile sends the key bare, as most clients do, so every attempt and every client uses one key.',
      cannot:
        'Make another client (an SDK, curl, a proxy) send the same bytes: a quoted and a bare key are two keys here.',
    },
    quotedOnly: { oncely: 'The profile keeps the quoted Structured Field string.' },
    bareOnly: { oncely: 'The profile sends the key bare; a quoted key would be a 400.' },
    unmeasured: {
      oncely: 'The profile keeps the encoding that was accepted.',
      cannot: 'Say whether the other encoding works: a fresh key with the accepted one was refused too.',
    },
  },
  'key-length': {
    ok: { oncely: "oncely's keys are 36 characters (UUID); caller keys may have up to 255." },
    short: {
      oncely: "oncely's minted keys (36 characters) fit.",
      cannot: 'Send longer caller keys (intent(name, { key })): keep them within the limit.',
    },
    unmeasured: {
      oncely: "oncely's minted keys (36 characters) were accepted.",
      cannot: 'Say how long a key may be: a fresh key of 36 characters was refused too.',
    },
  },
  identity: {
    unknown: {
      oncely: 'Nothing to do on the client.',
      cannot:
        'Tell a replay from a second effect: answers carry no id, no Location and equal bodies, so the race and replay checks are inconclusive.',
    },
  },
  replay: {
    same: { oncely: 'A replay settles the intent like the first answer would have.' },
    differs: {
      oncely: 'oncely settles on whatever the replay says (its status decides).',
      cannot: 'Recover the first answer the server did not store as it was sent.',
    },
    refused: {
      oncely:
        'A retry after a lost answer is refused like this: the intent ends unknown with its key kept (no second effect) and the app reconciles.',
      cannot: 'Learn the first answer from a retry: the server does not replay it.',
    },
    unmeasured: {
      oncely: 'oncely sends the same key on every attempt.',
      cannot: 'Say whether a retry after a lost answer runs again: not measured.',
    },
    reran: {
      oncely: 'oncely sends the same key on every attempt, which is all a client can do.',
      cannot:
        'Stop a server that ignores the key from running each retry again: every retry after a lost answer is a second effect.',
    },
  },
  'replay-marker': {
    marked: { oncely: 'res.replayed is true for a replay; a replayed 5xx is final, not retried.' },
    unmeasured: {
      oncely: "The profile keeps the base profile's marker.",
      cannot: 'Say how replays are marked: the server never replayed.',
    },
    other: { oncely: 'The profile recognises this marker, so res.replayed and replayed errors work.' },
    none: {
      oncely:
        'A replayed success is a success. A replayed 5xx looks fresh, so it is retried with the same key until the budget ends and the intent stays unknown (no second effect).',
      cannot: 'Report res.replayed: it stays false.',
    },
  },
  mismatch: {
    ietf: { oncely: 'KeyReusedError; never retried.' },
    mapped: { oncely: 'The profile maps this status to KeyReusedError; never retried.' },
    ambiguous: {
      oncely:
        'Left as the status means elsewhere (400: a failed request; 409: in progress, retried until InProgressError). No second effect.',
      cannot: 'Tell this mismatch from a validation error or a request in progress.',
    },
    replayed: {
      oncely:
        'oncely itself never sends another body under a key: a changed request is a local IntentMismatchError before anything is sent.',
      cannot: 'Protect other clients: the server answers a changed request with the first answer, silently.',
    },
    rerun: {
      oncely: 'oncely never sends another body under a key (IntentMismatchError before sending).',
      cannot: 'Make the server bind a key to its request: another client reusing a key gets a second effect.',
    },
  },
  'key-order': {
    same: { oncely: 'Nothing to do.' },
    unmeasured: {
      oncely: 'Nothing to do.',
      cannot: "Say how the server compares bodies: its answer to the repeat was not the server's word about the key.",
    },
    strict: {
      oncely: 'oncely sends the body it was given on every attempt, so retries carry the same bytes.',
      cannot:
        'Keep a resume after reload byte-identical if the app builds the object in another field order: build it the same way (or sort its keys).',
    },
  },
  'number-type': {
    strict: { oncely: 'Nothing to do.' },
    unmeasured: {
      oncely: 'Nothing to do.',
      cannot: "Say how the server compares bodies: its answer to the repeat was not the server's word about the key.",
    },
    loose: {
      oncely: 'oncely never sends a changed body under a key, so this does not reach the server through oncely.',
      cannot: 'Stop the server from treating "1000" and 1000 as one request for other clients.',
    },
  },
  'in-progress': {
    ietf: { oncely: 'Waits Retry-After (capped by maxRetryAfter) and retries with the same key, within the budget.' },
    noRetryAfter: {
      oncely: 'Waits at least a floor (~1 s) with backoff, same key, bounded by the budget.',
    },
    mapped: { oncely: 'The profile maps this status to in progress: same key, waits, bounded by the budget.' },
    retryable: { oncely: 'Retried with the same key as a transient error, bounded by the budget.' },
    ambiguous: {
      oncely:
        'The profile leaves the status as it is: an attempt overlapping an unanswered one ends the intent unknown with its key kept (no second effect), never a wait.',
      cannot: 'Wait out a request in progress: its answer cannot be told from the other meaning of the status.',
    },
    waits: { oncely: 'Nothing to do: the server holds the second request until the first is done.' },
    none: {
      oncely: 'Nothing a client can add: it sends one attempt per intent at a time.',
      cannot: 'Make the server hold or refuse a second request while the first runs.',
    },
    refused: {
      oncely: 'Nothing to do.',
      cannot: 'Say how the server answers a request in progress: every burst was refused as a whole.',
    },
    unseen: {
      oncely: 'Nothing to do.',
      cannot: 'Say how the server answers: no request overlapped. Pass --slow with a header that slows the effect.',
    },
  },
  race: {
    one: { oncely: 'One attempt in flight per intent (coordinator), the same key on each.' },
    unmeasured: {
      oncely: 'One attempt in flight per intent (coordinator), the same key on each.',
      cannot:
        'Say whether two overlapping requests with one key run twice: not enough of the burst overlapped at the server.',
    },
    several: {
      oncely:
        'oncely keeps one attempt in flight per intent and sends one key, which makes overlap rare (a timed-out attempt still running on the server can overlap its retry).',
      cannot:
        'Fix a server that races: two simultaneous first requests with one key ran twice. Fix its key store (an atomic claim).',
    },
  },
  'missing-key': {
    rejected: { oncely: 'oncely always sends a key on keyed methods (POST, PATCH).' },
    processed: {
      oncely: 'oncely always sends a key on keyed methods (POST, PATCH).',
      cannot: 'Protect requests sent without oncely: the server runs them without any protection.',
    },
  },
  'error-answer': {
    stored: { oncely: 'A replayed error is final (when marked); the intent fails, the key is kept.' },
    released: { oncely: 'A retry after an error runs again, as the server means it to.' },
    untested: { oncely: 'Nothing to do.', cannot: 'Say how errors are kept: --error-json was accepted.' },
    unmeasured: {
      oncely: 'Nothing to do.',
      cannot: 'Say how errors are kept: the valid body under that key was refused for another reason.',
    },
  },
  cors: {
    ok: { oncely: 'Browsers can send the key and read the replay marker and Retry-After.' },
    blocked: {
      oncely: 'A blocked preflight fails before anything is sent: no effect, a network error to the app.',
      cannot: 'Send the key from a browser on this origin until the server allows the header.',
    },
    hidden: {
      oncely: 'Without exposed headers, oncely in a browser falls back to backoff and res.replayed is false.',
      cannot: 'Read headers the server does not expose (Access-Control-Expose-Headers).',
    },
  },
  retention: {
    unpublished: {
      oncely: 'keyTtl (24 h by default): an unknown intent older than that is never resent (IntentExpiredError).',
      cannot: "Learn the server's retention from the wire: set keyTtl to at most the documented value.",
    },
  },
} satisfies Record<FindingId, Record<string, Notes>>;

/** A finding with its notes. */
export function finding<I extends FindingId>(
  id: I,
  note: keyof (typeof NOTES)[I],
  severity: Severity,
  result: string,
  evidence?: string[],
  remedy?: string,
): Finding {
  const notes = (NOTES[id] as Record<string, Notes>)[note as string]!;
  return {
    id,
    severity,
    result,
    ...(evidence && evidence.length > 0 ? { evidence } : {}),
    ...notes,
    ...(remedy ? { remedy } : {}),
  };
}
