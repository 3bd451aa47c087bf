/**
 * The contract server the e2e suite and `npm run demo:web` run: a real node:http
 * server on 127.0.0.1 with its own SQLite file.
 *
 * Routes: `POST /payments`, `GET /ledger`, `GET /__control` (faults, held count,
 * request log), `POST /__control` (see `faults.ts`), `GET /health`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AllowedOrigins, answerPreflight, applyCors } from './cors.ts';
import { PaymentsDb } from './db.ts';
import { type ControlRequest, Faults } from './faults.ts';
import { readBody, sendJson, sendProblem } from './http-io.ts';
import { handlePayment, type RequestLogEntry } from './payments.ts';
import { problems } from './problem.ts';

export interface ApiServerOptions {
  /** @default 0 (any free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** SQLite file. @default a new file in a new temp directory, removed on close */
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
  readonly db: PaymentsDb;
  readonly faults: Faults;
  /** Every request to `POST /payments`, in arrival order of their answers. */
  readonly requests: readonly RequestLogEntry[];
  close(): Promise<void>;
}

export interface ControlState {
  faults: ReturnType<Faults['snapshot']>;
  requests: readonly RequestLogEntry[];
  charges: number;
}

export async function startApiServer(options: ApiServerOptions = {}): Promise<ApiServer> {
  const tempDir = options.dbPath ? undefined : mkdtempSync(join(tmpdir(), 'oncely-e2e-'));
  const dbPath = options.dbPath ?? join(tempDir!, 'payments.sqlite');
  const db = new PaymentsDb(dbPath);
  const faults = new Faults();
  const requests: RequestLogEntry[] = [];
  const allowed = options.allowedOrigins ?? '*';
  const paymentContext = {
    db,
    faults,
    retryAfter: options.retryAfter ?? 1,
    now: () => Date.now(),
    log: (entry: RequestLogEntry) => {
      requests.push(entry);
      options.onLog?.(entry);
    },
  };
  const controlState = (): ControlState => ({
    faults: faults.snapshot(),
    requests,
    charges: db.charges().length,
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (!faults.keepAlive) res.setHeader('Connection', 'close');
    if (method === 'OPTIONS' && req.headers['access-control-request-method']) return answerPreflight(req, res, allowed);
    if (!applyCors(req, res, allowed)) {
      return sendProblem(res, { type: 'about:blank', title: 'Origin not allowed', status: 403 });
    }
    const only = (allowedMethod: string) => {
      if (method === allowedMethod) return true;
      res.setHeader('Allow', allowedMethod);
      sendProblem(res, problems.methodNotAllowed(method, path));
      return false;
    };
    switch (path) {
      case '/payments':
        if (only('POST')) await handlePayment(req, res, paymentContext);
        return;
      case '/ledger':
        if (only('GET')) {
          const charges = db.charges();
          sendJson(res, 200, { count: charges.length, charges });
        }
        return;
      case '/health':
        if (only('GET')) sendJson(res, 200, { ok: true });
        return;
      case '/__control':
        if (method === 'GET') return sendJson(res, 200, controlState());
        if (only('POST')) {
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
            db.reset();
            requests.length = 0;
          }
          sendJson(res, 200, controlState());
        }
        return;
      default:
        sendProblem(res, problems.notFound(path));
    }
  }

  const server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendProblem(res, problems.unavailable(String(error)));
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port, address } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${address}:${port}`,
    port,
    db,
    faults,
    requests,
    close() {
      closed ??= (async () => {
        faults.abortHeld();
        // Let the abandoned handlers release their claims before the database closes.
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        db.close();
        if (tempDir) rmSync(tempDir, { recursive: true, force: true });
      })();
      return closed;
    },
  };
}
