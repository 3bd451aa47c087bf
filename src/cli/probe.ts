/**
 * The check's HTTP side: one plain `fetch` per request (never oncely's retry engine: the
 * check measures the server), a hard request cap, and how answers are compared.
 */
import { InvalidArgumentError } from '../errors.js';

/** One answer as the check records it. `status` 0: no HTTP answer (network error, timeout). */
export interface ProbeAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text. */
  body: unknown;
  text: string;
  error?: string;
  /** Milliseconds from handing the request to fetch to reading the whole answer. */
  ms: number;
}

export interface ProbeRequest {
  method: string;
  /** The header value carrying the key, already encoded; none when `undefined`. */
  key?: string;
  body: string;
  contentType: string;
  extraHeaders?: readonly [string, string][];
}

export interface ProberOptions {
  url: string;
  keyHeader: string;
  headers: readonly [string, string][];
  origin: string | undefined;
  maxRequests: number;
  timeout: number;
  fetch: typeof globalThis.fetch;
}

/** Sends the check's requests; refuses the one past `maxRequests`. */
export class Prober {
  sent = 0;
  readonly #options: ProberOptions;

  constructor(options: ProberOptions) {
    this.#options = options;
  }

  send(request: ProbeRequest): Promise<ProbeAnswer> {
    this.#count();
    return this.#exchange(this.#options.url, this.#init(request));
  }

  /**
   * Sends `requests` at one instant: every request is built and counted first, then all
   * are handed to fetch in one synchronous loop, so none waits on another's setup.
   */
  burst(requests: readonly ProbeRequest[]): Promise<ProbeAnswer[]> {
    for (const _ of requests) this.#count();
    const inits = requests.map((request) => this.#init(request));
    return Promise.all(inits.map((init) => this.#exchange(this.#options.url, init)));
  }

  /**
   * Opens `connections` keep-alive connections with simultaneous OPTIONS requests (no
   * effect), so a burst of as many requests goes out on open sockets at once instead of
   * trickling in behind TCP handshakes.
   */
  async warm(connections: number): Promise<ProbeAnswer[]> {
    for (let i = 0; i < connections; i++) this.#count();
    const { url, headers, timeout } = this.#options;
    const init = () => ({
      method: 'OPTIONS',
      headers: new Headers(headers as [string, string][]),
      redirect: 'manual' as const,
      signal: AbortSignal.timeout(timeout),
    });
    return Promise.all(Array.from({ length: connections }, () => this.#exchange(url, init())));
  }

  #init(request: ProbeRequest): RequestInit {
    const { keyHeader, headers, origin, timeout } = this.#options;
    const out = new Headers(headers as [string, string][]);
    out.set('Content-Type', request.contentType);
    if (origin) out.set('Origin', origin);
    for (const [name, value] of request.extraHeaders ?? []) out.set(name, value);
    if (request.key !== undefined) out.set(keyHeader, request.key);
    return {
      method: request.method,
      headers: out,
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeout),
    };
  }

  /** A CORS preflight for `method` with the key header, as a browser would send it. */
  async preflight(method: string, requestHeaders: readonly string[]): Promise<ProbeAnswer> {
    const { url, origin, timeout } = this.#options;
    this.#count();
    return this.#exchange(url, {
      method: 'OPTIONS',
      headers: {
        Origin: origin ?? '',
        'Access-Control-Request-Method': method,
        'Access-Control-Request-Headers': requestHeaders.map((name) => name.toLowerCase()).join(','),
      },
      redirect: 'manual',
      signal: AbortSignal.timeout(timeout),
    });
  }

  #count(): void {
    const { maxRequests } = this.#options;
    if (this.sent >= maxRequests)
      throw new InvalidArgumentError(`oncely check stopped at its cap of ${maxRequests} requests (--max-requests).`);
    this.sent += 1;
  }

  async #exchange(url: string, init: RequestInit): Promise<ProbeAnswer> {
    const start = performance.now();
    try {
      const response = await this.#options.fetch(url, init);
      const text = await response.text();
      const ms = performance.now() - start;
      return { status: response.status, headers: response.headers, body: parseBody(text), text, ms };
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
      const message = error instanceof Error ? `${error.message}${cause}` : String(error);
      return {
        status: 0,
        headers: new Headers(),
        body: undefined,
        text: '',
        error: message,
        ms: performance.now() - start,
      };
    }
  }
}

const parseBody = (text: string): unknown => {
  if (text === '') return '';
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

export const isSuccess = (answer: ProbeAnswer): boolean => answer.status >= 200 && answer.status < 300;

/** No answer, 408, 429 or a 5xx: says nothing about the key (the check sends it once more). */
export const isTransient = (answer: ProbeAnswer): boolean =>
  answer.status === 0 || answer.status === 408 || answer.status === 429 || answer.status >= 500;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * What names the resource an answer created: an `id` field (top level or under `data`),
 * else `Location`, else the whole body. `undefined` when the answer has none of them.
 */
export function identityOf(answer: ProbeAnswer): string | undefined {
  const { body } = answer;
  const holder = isObject(body) && isObject(body.data) ? body.data : body;
  if (isObject(holder) && (typeof holder.id === 'string' || typeof holder.id === 'number')) return `id ${holder.id}`;
  const location = answer.headers.get('location');
  if (location) return `Location ${location}`;
  if (answer.text === '') return undefined;
  return `body ${sameBody(answer)}`;
}

/** JSON with object keys sorted at every depth (the check's own copy: it uses only public API). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value).filter(([, item]) => item !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${canonicalJson(item)}`).join(',')}}`;
}

/** The body in a form where equal JSON compares equal. */
export const sameBody = (answer: ProbeAnswer): string =>
  typeof answer.body === 'string' ? answer.body : canonicalJson(answer.body);

/** Headers that differ between any two answers of one server and say nothing about replays. */
const VOLATILE = new Set([
  'date',
  'connection',
  'keep-alive',
  'content-length',
  'etag',
  'last-modified',
  'x-request-id',
  'x-response-time',
  'server-timing',
  'age',
  'transfer-encoding',
  'vary',
]);

/** Replay markers seen in the wild, checked first. */
const KNOWN_MARKERS = [
  'idempotent-replayed',
  'idempotency-replayed',
  'x-idempotent-replayed',
  'x-idempotency-replayed',
  'request-idempotency',
  'x-cache',
  'x-idempotency-hit',
];

/** The header (and value) the replay carries and the first answer did not, if any. */
export function replayMarker(first: ProbeAnswer, replay: ProbeAnswer): { header: string; value: string } | undefined {
  const added = [...replay.headers].filter(
    ([name, value]) => !VOLATILE.has(name) && first.headers.get(name) !== value && !name.startsWith('access-control-'),
  );
  const known = added.find(([name]) => KNOWN_MARKERS.includes(name));
  const pick = known ?? added.find(([name]) => /replay|idempot|cache|hit/i.test(name));
  return pick && { header: canonicalName(pick[0]), value: pick[1] };
}

/** `idempotent-replayed` → `Idempotent-Replayed`. */
export const canonicalName = (name: string): string =>
  name.replace(/(^|-)([a-z])/g, (_, dash: string, char: string) => dash + char.toUpperCase());

/** Parse `'Name: value'` (a CLI header). */
export function parseHeader(text: string, option: string): [string, string] {
  const colon = text.indexOf(':');
  const name = colon > 0 ? text.slice(0, colon).trim() : '';
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
    throw new InvalidArgumentError(`${option} expects 'Name: value', got ${JSON.stringify(text)}.`);
  return [name, text.slice(colon + 1).trim()];
}
