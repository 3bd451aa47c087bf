/**
 * The payments API the e2e suite and `npm run demo:web` run: an Express 5 app on
 * `oncely/server` (`idempotent` from `oncely/server/express`) over the `SqliteKeyStore`
 * (`oncely/node`), on 127.0.0.1 with its own SQLite file.
 *
 * Routes: `POST /payments`, `GET /ledger`, `GET /__control` (faults, held count,
 * request log), `POST /__control` (see `faults.ts`), `GET /health`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express, { type ErrorRequestHandler } from 'express';
import { openSqliteKeyStore } from 'oncely/node';
import { type AllowedOrigins, answerPreflight, applyCors } from './cors.ts';
import { type ControlRequest, Faults } from './faults.ts';
import { readBody, sendJson, sendProblem } from './http-io.ts';
import { type Charge, Ledger } from './ledger.ts';
import { paymentRoute, type RequestLogEntry } from './payments.ts';
import { problems } from './problem.ts';

export interface ApiServerOptions {
  /** @default 0 (any free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** SQLite file (keys and charges). @default a new file in a new temp directory, removed on close */
  dbPath?: string;
  /** Origins the API answers CORS for. @default '*' (reflected) */
  allowedOrigins?: AllowedOrigins;
  /** Retry-After seconds on a 409. @default 1 */
  retryAfter?: number;
  /** Hears one line per request. */
  onLog?: (entry: RequestLogEntry) => void;
}

export interface ApiServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** The SQLite file: the store's keys and the `charges` table. */
  readonly dbPath: string;
  readonly faults: Faults;
  /** Every request to `POST /payments`, in arrival order of their answers. */
  readonly requests: readonly RequestLogEntry[];
  /** Every committed charge. */
  charges(): Charge[];
  close(): Promise<void>;
}

export interface ControlState {
  faults: ReturnType<Faults['snapshot']>;
  requests: readonly RequestLogEntry[];
  charges: number;
}

/**
 * How long a handler may hold the key's transaction. A held request (`{ hold: true }`) holds
 * it, and every other write of the file waits behind it (SQLite has one writer): released by
 * hand in `demo:web`, it must outlast the store's 30 s default.
 */
const HOLD_LIMIT_MS = 600_000;

/** Methods each route answers; another method is a 405 with `Allow`. */
const ALLOW: Record<string, string> = { '/payments': 'POST', '/ledger': 'GET', '/health': 'GET', '/__control': 'POST' };

export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  const tempDir = options.dbPath ? undefined : mkdtempSync(join(tmpdir(), 'oncely-e2e-'));
  const dbPath = options.dbPath ?? join(tempDir!, 'payments.sqlite');
  const store = await openSqliteKeyStore({ file: dbPath, transactionTimeout: HOLD_LIMIT_MS });
  const ledger = await Ledger.open(store);
  const faults = new Faults();
  const requests: RequestLogEntry[] = [];
  const allowed = options.allowedOrigins ?? '*';
  const log = (entry: RequestLogEntry) => {
    requests.push(entry);
    options.onLog?.(entry);
  };
  const controlState = (): ControlState => ({ faults: faults.snapshot(), requests, charges: ledger.charges().length });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('strict routing', true);
  app.set('case sensitive routing', true);
  app.use((req, res, next) => {
    if (!faults.keepAlive) res.setHeader('Connection', 'close');
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'])
      return answerPreflight(req, res, allowed);
    if (!applyCors(req, res, allowed))
      return sendProblem(res, { type: 'about:blank', title: 'Origin not allowed', status: 403 });
    next();
  });
  app.post(
    '/payments',
    ...paymentRoute({ store, faults, retryAfter: options.retryAfter ?? 1, now: () => Date.now(), log }),
  );
  app.get('/ledger', (_req, res) => {
    const charges = ledger.charges();
    sendJson(res, 200, { count: charges.length, charges });
  });
  app.get('/health', (_req, res) => sendJson(res, 200, { ok: true }));
  app.get('/__control', (_req, res) => sendJson(res, 200, controlState()));
  app.post('/__control', async (req, res) => {
    let request: ControlRequest;
    try {
      const text = await readBody(req);
      request = text.trim() === '' ? {} : (JSON.parse(text) as ControlRequest);
      if (request === null || typeof request !== 'object' || Array.isArray(request))
        throw new TypeError('the control body must be a JSON object');
      faults.apply(request);
    } catch (error) {
      return sendProblem(res, problems.badRequest(error instanceof Error ? error.message : String(error)));
    }
    if (request.reset) {
      await ledger.reset(); // after the held transactions, given up by `apply`, rolled back
      requests.length = 0;
    }
    sendJson(res, 200, controlState());
  });
  app.use((req, res) => {
    const allow = ALLOW[req.path];
    if (!allow) return sendProblem(res, problems.notFound(req.path));
    res.setHeader('Allow', allow);
    sendProblem(res, problems.methodNotAllowed(req.method, req.path));
  });
  const crashed: ErrorRequestHandler = (error, _req, res, _next) => {
    if (!res.headersSent) sendProblem(res, problems.unavailable(String(error)));
    else res.socket?.destroy();
  };
  app.use(crashed);

  const server: Server = await new Promise((resolve, reject) => {
    const listening = app.listen(options.port ?? 0, options.host ?? '127.0.0.1', (error?: Error) =>
      error ? reject(error) : resolve(listening),
    );
  });
  server.keepAliveTimeout = 5_000;
  const { port, address } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${address}:${port}`,
    port,
    dbPath,
    faults,
    requests,
    charges: () => ledger.charges(),
    close() {
      closed ??= (async () => {
        faults.abortHeld(); // their transactions roll back; the store's close waits for them
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await store.close();
        ledger.close();
        if (tempDir) rmSync(tempDir, { recursive: true, force: true });
      })();
      return closed;
    },
  };
}
