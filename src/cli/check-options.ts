/** Options of `runCheck` (and of `oncely check`, flag for flag), validated in one place. */
import { InvalidArgumentError } from '../errors.js';
import type { Profile } from '../profiles/profiles.js';
import { profiles } from '../profiles/registry.js';
import { ietfBare, ietfBareUnmarked } from '../profiles/variants.js';
import { type CheckBody, formBody, jsonBody } from './body-variants.js';
import { parseHeader } from './probe.js';

/** Profiles `--profile` knows by name. */
export const CHECK_PROFILES: Readonly<Record<string, Profile>> = {
  ...profiles,
  'ietf-bare': ietfBare,
  'ietf-bare-unmarked': ietfBareUnmarked,
};

export interface CheckOptions {
  /** The endpoint: every request goes to this one URL. */
  url: string;
  /**
   * The body of a valid request (a value, sent as JSON). One of `json` and `form`. A
   * string holding `{{key}}` is a template: each key gets its own body, with `{{key}}`
   * replaced by a UUID of that key, for servers that refuse a body another key already sent.
   * @example { amount: 1000, currency: 'EUR', ref: '{{key}}' }
   */
  json?: unknown;
  /**
   * The body of a valid request as a form (`application/x-www-form-urlencoded`, Stripe's style).
   * @example 'amount=1000&currency=usd'
   */
  form?: string | Record<string, string>;
  /** @default 'POST' */
  method?: 'POST' | 'PATCH';
  /** Headers on every request, e.g. `{ Authorization: 'Bearer …' }`. */
  headers?: Record<string, string> | readonly [string, string][];
  /** Send `Origin` on every request and check the CORS preflight for it. */
  origin?: string;
  /**
   * The profile you mean to use: its key header is probed, and the suggestion is
   * written as changes to it.
   * @default 'ietf'
   */
  profile?: string | Profile;
  /**
   * Simultaneous first requests with one key in the `burst` step (2–20).
   * @default 5
   */
  concurrency?: number;
  /** A header that makes the server's effect slow (a test hook), on the burst's requests: `'X-Delay: 500'`. */
  slow?: string | [string, string];
  /**
   * Rounds of the burst, each with a fresh key, in which the requests must overlap at the
   * server (an in-progress answer, a refusal before the first finished, a second resource)
   * for the race to count as measured: a race is a matter of timing, so one round can miss it.
   * @default 3
   */
  rounds?: number;
  /**
   * Most burst rounds: rounds without overlap do not count, and the check keeps going until
   * `rounds` overlapped or this many were sent (then the race is "not measured").
   * @default 10
   */
  maxRounds?: number;
  /**
   * A body the server rejects (for the `error-answer` step).
   * @default [] with `json`
   */
  errorJson?: unknown;
  /**
   * A form the server rejects (for the `error-answer` step).
   * @default '' (an empty form) with `form`
   */
  errorForm?: string | Record<string, string>;
  /**
   * Most requests the check may send; it refuses to start when its plan needs more.
   * @default 100
   */
  maxRequests?: number;
  /** Per-request timeout (ms). @default 10_000 */
  timeout?: number;
  /** @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
}

export interface ResolvedCheckOptions {
  url: string;
  /** The bodies for one key; `token` replaces `{{key}}` (the bodies are the same for every key without a template). */
  bodyFor(token: string): CheckBody;
  /** The body holds `{{key}}`. */
  templated: boolean;
  method: 'POST' | 'PATCH';
  headers: [string, string][];
  origin: string | undefined;
  profile: Profile;
  /** How the suggestion names its base (`ietf`, or `base` for a Profile object). */
  profileName: string;
  concurrency: number;
  rounds: number;
  maxRounds: number;
  slow: [string, string] | undefined;
  /** The rejected body for one key, encoded like `bodyFor`. */
  errorFor(token: string): string;
  maxRequests: number;
  timeout: number;
  fetch: typeof globalThis.fetch;
}

/** In a body, `{{key}}` stands for a value unique to each key (a UUID of the key). */
const PLACEHOLDER = '{{key}}';
const ENCODED_PLACEHOLDER = encodeURIComponent(PLACEHOLDER);

/** `value` with `{{key}}` replaced by `token` in every string (names included). */
function fill(value: unknown, token: string): unknown {
  if (typeof value === 'string') return value.replaceAll(PLACEHOLDER, token);
  if (Array.isArray(value)) return value.map((item) => fill(item, token));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [fill(name, token), fill(item, token)]));
  return value;
}

const integerIn = (value: number | undefined, fallback: number, min: number, max: number, name: string) => {
  const n = value ?? fallback;
  if (!Number.isInteger(n) || n < min || n > max)
    throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got ${value}.`);
  return n;
};

export function resolveCheckOptions(options: CheckOptions): ResolvedCheckOptions {
  const url = options.url;
  if (typeof url !== 'string' || !URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
    throw new InvalidArgumentError(`oncely check needs an http(s) URL, got ${JSON.stringify(url)}.`);
  if ((options.json === undefined) === (options.form === undefined))
    throw new InvalidArgumentError(
      "oncely check needs the body of a valid request, as one of --json '{\"amount\":1000}' and --form 'amount=1000'.",
    );
  const form = (value: string | Record<string, string>) =>
    typeof value === 'string' ? value : new URLSearchParams(value).toString();
  const method = options.method ?? 'POST';
  if (method !== 'POST' && method !== 'PATCH')
    throw new InvalidArgumentError(`--method must be POST or PATCH, got ${JSON.stringify(method)}.`);
  let profile: Profile;
  let profileName: string;
  if (options.profile === undefined || typeof options.profile === 'string') {
    profileName = options.profile ?? 'ietf';
    const found = CHECK_PROFILES[profileName];
    if (!found)
      throw new InvalidArgumentError(
        `Unknown profile ${JSON.stringify(profileName)}. Use one of: ${Object.keys(CHECK_PROFILES).join(', ')}.`,
      );
    profile = found;
  } else {
    profile = options.profile;
    profileName = 'base';
  }
  if (options.origin !== undefined && !URL.canParse(options.origin))
    throw new InvalidArgumentError(`--origin must be an origin such as https://shop.example, got ${options.origin}.`);
  const headers = Array.isArray(options.headers)
    ? options.headers.map(([name, value]) => [name, value] as [string, string])
    : Object.entries(options.headers ?? {});
  const slow = typeof options.slow === 'string' ? parseHeader(options.slow, '--slow') : options.slow;
  const rounds = integerIn(options.rounds, 3, 1, 10, '--rounds');
  const valid = options.form === undefined ? JSON.stringify(options.json) : form(options.form);
  const error = options.form === undefined ? JSON.stringify(options.errorJson ?? []) : form(options.errorForm ?? '');
  return {
    url,
    bodyFor: (token) =>
      options.form === undefined
        ? jsonBody(fill(options.json, token))
        : formBody(form(options.form).replaceAll(PLACEHOLDER, token).replaceAll(ENCODED_PLACEHOLDER, token)),
    templated: valid.includes(PLACEHOLDER) || valid.includes(ENCODED_PLACEHOLDER),
    method,
    headers,
    origin: options.origin === undefined ? undefined : new URL(options.origin).origin,
    profile,
    profileName,
    concurrency: integerIn(options.concurrency, 5, 2, 20, '--concurrency'),
    rounds,
    maxRounds: integerIn(options.maxRounds, Math.max(10, rounds), rounds, 50, '--max-rounds'),
    slow,
    errorFor: (token) =>
      options.form === undefined
        ? JSON.stringify(fill(options.errorJson ?? [], token))
        : error.replaceAll(PLACEHOLDER, token).replaceAll(ENCODED_PLACEHOLDER, token),
    maxRequests: integerIn(options.maxRequests, 100, 1, 1000, '--max-requests'),
    timeout: integerIn(options.timeout, 10_000, 1, 600_000, '--timeout'),
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
  };
}
