/**
 * The server fault matrix (issue 27 §4) as data: each case is a fault and the requests that
 * meet it, run once per store (PostgresKeyStore, SqliteKeyStore) behind the Express adapter
 * in a child process. The invariants (invariants.ts) are checked on every case, after it
 * and after a final retry of every key it used; `check` holds what is particular to a case.
 */
import { expect } from 'vitest';
import type { Answer, AppProcess, Database, Post, StoreKind } from './env.js';

export const MAX_BODY = 65_536;
export const TRANSACTION_TIMEOUT = 3_000;

export interface CaseContext {
  kind: StoreKind;
  /** A key of this case's own (the case id is in it). */
  key(name: string): string;
  post(key: string | undefined, options?: Post): Promise<Answer>;
  /** A hand-written request on a fresh socket to the app. */
  raw(text: string): Promise<Answer>;
  /** `text` (a request head with `key`) then `bytes` of a chunked body that never ends. */
  rawChunked(key: string, text: string, bytes: number): Promise<Answer>;
  app(): AppProcess;
  /** SIGKILLs the app and starts a new one on the same database. */
  restart(): Promise<void>;
  /** Starts `n` more app processes on the same database; their URLs. */
  more(n: number): Promise<string[]>;
  postTo(url: string, key: string, options?: Post): Promise<Answer>;
  db: Database;
}

export interface ServerCase {
  id: string;
  /** The fault, in words. */
  fault: string;
  stores: StoreKind[];
  /** In `npm test`'s subset; every case runs under `npm run chaos`. */
  fast: boolean;
  /** Statuses an answer of this case may have beyond 2xx/400/409/413/422 (0: no answer came). */
  alsoAllowed?: number[];
  /** Node's HTTP parser refuses the request (400, no body) before the app sees it. */
  parserRejects?: boolean;
  run(ctx: CaseContext): Promise<void>;
}

const BOTH: StoreKind[] = ['pg', 'sqlite'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const problemJson = (a: Answer) => String(a.headers['content-type']).startsWith('application/problem+json');

/** Garbage a handler may answer instead of `{ status, headers, body }`. */
export const GARBAGE = [
  'null',
  'string',
  'float-status',
  'string-status',
  'low-status',
  'object-header',
  'crlf-header',
  'bigint-body',
  'function-body',
  'symbol-body',
];

/** Malformed key headers, as raw header lines (`null`: no key header at all). */
export const MALFORMED_KEYS: [string, string | null][] = [
  ['missing', null],
  ['empty', 'Idempotency-Key: '],
  ['empty-quoted', 'Idempotency-Key: ""'],
  ['too-long', `Idempotency-Key: "${'k'.repeat(256)}"`],
  ['unquoted', 'Idempotency-Key: mk-unquoted'],
  ['two-headers', 'Idempotency-Key: "mk-two-a"\r\nIdempotency-Key: "mk-two-b"'],
  ['non-ascii', 'Idempotency-Key: "mk-\u00e9"'],
  ['crlf', 'Idempotency-Key: "mk-cr\r\nlf"'],
  ['bare-cr', 'Idempotency-Key: "mk-cr\rx"'],
  ['obs-fold', 'Idempotency-Key: "mk-fold\r\n  ed"'],
];

export const CASES: ServerCase[] = [
  {
    id: 'baseline-replay',
    fault: 'none: a request, then its repeat',
    stores: BOTH,
    fast: true,
    async run(ctx) {
      const key = ctx.key('k');
      expect((await ctx.post(key)).status).toBe(201);
      expect((await ctx.post(key)).headers['idempotent-replayed']).toBe('true');
    },
  },
  {
    id: 'kill-before-commit',
    fault: 'the server SIGKILLed after the claim and the ledger row, before the commit',
    stores: BOTH,
    fast: true,
    alsoAllowed: [0],
    async run(ctx) {
      const key = ctx.key('k');
      const pending = ctx.post(key, { behave: 'never' });
      await ctx.app().waitFor(`written ${key}`);
      await ctx.restart();
      expect((await pending).status).toBe(0);
      expect(await ctx.db.effects(key)).toBe(0);
      expect(await ctx.db.keyRows(key)).toBe(0);
    },
  },
  {
    id: 'kill-after-commit',
    fault: 'the server SIGKILLed after the commit, before the answer left',
    stores: BOTH,
    fast: true,
    alsoAllowed: [0],
    async run(ctx) {
      const key = ctx.key('k');
      const pending = ctx.post(key, { behave: 'after-commit' });
      const line = await ctx.app().waitFor('committed ');
      await ctx.restart();
      expect((await pending).status).toBe(0);
      const [, status, body64] = line.split(' ');
      const replay = await ctx.post(key);
      expect(replay.status).toBe(Number(status));
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.toString('base64')).toBe(body64);
    },
  },
  ...(['idle', 'query'] as const).map(
    (where): ServerCase => ({
      id: `pg-terminate-backend-${where}`,
      fault: `pg_terminate_backend of the handler's connection mid-transaction (${where === 'idle' ? 'between statements' : 'inside a statement'})`,
      stores: ['pg'],
      fast: true,
      alsoAllowed: [500],
      async run(ctx) {
        const key = ctx.key('k');
        const pending = ctx.post(key, { behave: `backend-${where}` });
        const pid = Number((await ctx.app().waitFor('backend ')).split(' ')[1]);
        await ctx.db.terminate(pid);
        expect((await pending).status).toBe(500);
        expect(await ctx.db.effects(key)).toBe(0);
      },
    }),
  ),
  ...(['commit-unsent', 'commit-lost'] as const).map(
    (mode): ServerCase => ({
      id: `pg-${mode}`,
      fault:
        mode === 'commit-unsent'
          ? 'the connection dies as the COMMIT is sent, before PostgreSQL gets it: no answer to the COMMIT, nothing committed'
          : 'PostgreSQL commits, the connection dies before the COMMIT answers: no answer to the COMMIT, all committed',
      stores: ['pg'],
      fast: true,
      alsoAllowed: [500],
      async run(ctx) {
        const key = ctx.key('k');
        const committed = mode === 'commit-lost' ? 1 : 0;
        // The store cannot know the COMMIT's outcome: never a success, whatever happened.
        expect((await ctx.post(key, { behave: mode })).status).toBe(500);
        expect(await ctx.db.effects(key)).toBe(committed);
        expect(await ctx.db.keyRows(key)).toBe(committed);
        // Until PostgreSQL notices its client gone and rolls back, the key is still held: a
        // retry gets 409 meanwhile, as a client would, and tries again.
        let retry = await ctx.post(key);
        for (let waited = 0; retry.status === 409 && waited < 5_000; waited += 100) {
          await sleep(100);
          retry = await ctx.post(key);
        }
        expect(retry.status).toBe(201);
        expect(retry.headers['idempotent-replayed']).toBe(committed ? 'true' : undefined);
        expect(await ctx.db.effects(key)).toBe(1);
      },
    }),
  ),
  ...(['before', 'after'] as const).map(
    (when): ServerCase => ({
      id: `handler-throws-${when}-writes`,
      fault: `the handler throws ${when} its own writes`,
      stores: BOTH,
      fast: true,
      alsoAllowed: [500],
      async run(ctx) {
        const key = ctx.key('k');
        expect((await ctx.post(key, { behave: `throw-${when}` })).status).toBe(500);
        expect(await ctx.db.effects(key)).toBe(0);
        expect(await ctx.db.keyRows(key)).toBe(0);
      },
    }),
  ),
  {
    id: 'slow-handler',
    fault: 'a handler slower than the 409 bound (2 s): its repeats get 409 + Retry-After within 1.5 s',
    stores: BOTH,
    fast: true,
    async run(ctx) {
      const key = ctx.key('k');
      const first = ctx.post(key, { behave: 'slow:2000' });
      await sleep(300);
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        const repeat = await ctx.post(key);
        expect(repeat.status).toBe(409);
        expect(performance.now() - t0).toBeLessThan(1_500);
      }
      expect((await first).status).toBe(201);
    },
  },
  {
    id: 'mismatch-in-progress',
    fault: 'another body under the key while the first still runs: 422; the same body: 409',
    stores: BOTH,
    fast: true,
    async run(ctx) {
      const key = ctx.key('k');
      const first = ctx.post(key, { behave: 'slow:1500' });
      await sleep(300);
      expect((await ctx.post(key, { body: JSON.stringify({ amount: 6 }) })).status).toBe(422);
      expect((await ctx.post(key)).status).toBe(409);
      expect((await first).status).toBe(201);
      expect((await ctx.post(key, { body: JSON.stringify({ amount: 6 }) })).status).toBe(422);
    },
  },
  {
    id: 'burst-4-processes-x-4',
    fault: '4 server processes × a burst of 4 simultaneous requests with one key',
    stores: BOTH,
    fast: true,
    // SqliteKeyStore across processes: a repeat may wait out lockTimeout (a 500, nothing ran).
    alsoAllowed: [500],
    async run(ctx) {
      const key = ctx.key('k');
      const urls = [ctx.app().url, ...(await ctx.more(3))];
      const answers = await Promise.all(
        urls.flatMap((url) => Array.from({ length: 4 }, () => ctx.postTo(url, key, { behave: 'slow:300' }))),
      );
      expect(answers.filter((a) => a.status === 201 && !a.headers['idempotent-replayed'])).toHaveLength(1);
    },
  },
  {
    id: 'expired-key',
    fault: 'a key past retention (its row and its effect moved 25 h back): new, it runs again',
    stores: BOTH,
    fast: true,
    async run(ctx) {
      const key = ctx.key('k');
      const first = await ctx.post(key);
      expect(first.status).toBe(201);
      await ctx.db.age(key);
      const again = await ctx.post(key);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      expect(again.body.equals(first.body)).toBe(false); // a new ledger row
    },
  },
  {
    id: 'huge-body-content-length',
    fault: 'a body over maxBodyBytes with its Content-Length: 413 problem+json, nothing ran',
    stores: BOTH,
    fast: true,
    async run(ctx) {
      const key = ctx.key('k');
      const answer = await ctx.post(key, { body: JSON.stringify({ pad: 'x'.repeat(MAX_BODY * 4) }) });
      expect(answer.status).toBe(413);
      expect(problemJson(answer)).toBe(true);
      expect(await ctx.db.effects(key)).toBe(0);
    },
  },
  {
    id: 'huge-body-chunked',
    fault: 'a chunked body (no Content-Length) over maxBodyBytes that never ends: 413 all the same',
    stores: BOTH,
    fast: true,
    alsoAllowed: [0],
    async run(ctx) {
      const key = ctx.key('k');
      const head = [
        'POST /payments HTTP/1.1',
        'Host: 127.0.0.1',
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
        `Idempotency-Key: "${key}"`,
        // Kept alive: with Connection: close, Node destroys the socket once the 413 is
        // written, and the unread rest of the body makes the kernel reset it under the
        // answer (no lingering close) — a race of Node's, not of oncely.
      ];
      const answer = await ctx.rawChunked(key, `${head.join('\r\n')}\r\n\r\n`, 4 * MAX_BODY);
      expect(answer.status).toBe(413);
      expect(problemJson(answer)).toBe(true);
      // The body never ends: the answer came because the server stopped at maxBodyBytes.
      expect(answer.early).toBe(true);
      expect(await ctx.db.effects(key)).toBe(0);
    },
  },
  ...MALFORMED_KEYS.map(
    ([name, line]): ServerCase => ({
      id: `malformed-key-${name}`,
      fault: `a malformed key header: ${name}`,
      stores: BOTH,
      fast: true,
      // CR or LF inside a header value, and obs-fold: llhttp answers 400 itself.
      parserRejects: ['crlf', 'bare-cr', 'obs-fold'].includes(name),
      async run(ctx) {
        const body = JSON.stringify({ amount: 5 });
        const head = [
          'POST /payments HTTP/1.1',
          'Host: 127.0.0.1',
          'Content-Type: application/json',
          `Content-Length: ${body.length}`,
          'Connection: close',
          ...(line === null ? [] : [line]),
        ];
        const answer = await ctx.raw(`${head.join('\r\n')}\r\n\r\n${body}`);
        expect(answer.status).toBe(400);
        for (const key of ['mk-two-a', 'mk-two-b', 'mk-unquoted', 'mk-cr', 'mk-fold'])
          expect(await ctx.db.effects(key)).toBe(0);
      },
    }),
  ),
  {
    id: 'client-disconnects-mid-body',
    fault: 'the client drops the connection halfway through its body',
    stores: BOTH,
    fast: true,
    alsoAllowed: [0],
    async run(ctx) {
      const key = ctx.key('k');
      const answer = await ctx.post(key, { disconnect: { declared: 1_000, sent: 100 } });
      expect(answer.status).toBe(0);
      await sleep(200);
      expect(await ctx.db.effects(key)).toBe(0);
    },
  },
  ...GARBAGE.map(
    (kind): ServerCase => ({
      id: `garbage-answer-${kind}`,
      fault: `the handler writes, then answers garbage (${kind}): a 500, nothing committed`,
      stores: BOTH,
      fast: kind === 'null' || kind === 'object-header' || kind === 'function-body',
      alsoAllowed: [500],
      async run(ctx) {
        const key = ctx.key('k');
        expect((await ctx.post(key, { behave: `garbage:${kind}` })).status).toBe(500);
        expect(await ctx.db.effects(key)).toBe(0);
      },
    }),
  ),
  {
    id: 'handler-never-resolves',
    fault: `a handler that never resolves: rolled back after transactionTimeout (${TRANSACTION_TIMEOUT} ms), 409 meanwhile`,
    stores: BOTH,
    fast: true,
    alsoAllowed: [500],
    async run(ctx) {
      const key = ctx.key('k');
      const first = ctx.post(key, { behave: 'never', timeoutMs: 10_000 });
      await ctx.app().waitFor(`written ${key}`);
      expect((await ctx.post(key)).status).toBe(409);
      expect((await first).status).toBe(500);
      expect(await ctx.db.effects(key)).toBe(0);
    },
  },
];
