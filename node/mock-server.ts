/**
 * The node:http adapter of the contract server (`oncely/mock`), exported from `oncely/node`
 * and needing no msw: real HTTP on a local port, for tests that need a socket (a browser,
 * another process, an HTTP client that MSW cannot intercept).
 */
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ContractServer } from '../src/mock/contract-server.js';

export interface ListenOptions {
  /**
   * TCP port; `0` picks a free one (read it from `url`).
   * @default 0
   */
  port?: number;
  /**
   * Interface to listen on.
   * @default '127.0.0.1'
   */
  host?: string;
}

export interface ListeningContractServer {
  /** Base URL, e.g. `http://127.0.0.1:53124` (no trailing slash). */
  url: string;
  /** Stop listening and destroy open connections (which releases hung requests). */
  close(): Promise<void>;
}

/** IncomingMessage → Request. Its signal aborts when the client disconnects before the answer. */
async function toRequest(req: IncomingMessage, origin: string, signal: AbortSignal): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const method = req.method ?? 'GET';
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const hasBody = method !== 'GET' && method !== 'HEAD' && chunks.length > 0;
  const body = hasBody ? new Uint8Array(Buffer.concat(chunks)) : undefined;
  return new Request(new URL(req.url ?? '/', origin), { method, headers, body, signal });
}

/** Response headers for `writeHead`, keeping every `Set-Cookie` apart. */
function toNodeHeaders(headers: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of headers) if (name !== 'set-cookie') out[name] = value;
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) out['set-cookie'] = cookies;
  return out;
}

async function serve(server: ContractServer, req: IncomingMessage, res: ServerResponse, origin: string) {
  const disconnected = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) disconnected.abort();
  });
  try {
    const response = await server.fetch(await toRequest(req, origin, disconnected.signal));
    if (response.type === 'error') {
      // The connection dies: the client sees a network error, not an HTTP answer.
      req.socket.destroy();
      return;
    }
    const body = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, toNodeHeaders(response.headers));
    res.end(body);
  } catch (error) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(`Contract server error: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Serve `server` over node:http.
 *
 * @example
 * const contract = createContractServer();
 * const http = await listenContractServer(contract);
 * await fetch(`${http.url}/payments`, { method: 'POST', headers: { 'Idempotency-Key': '"k1"' }, body: '{}' });
 * await http.close();
 */
export async function listenContractServer(
  server: ContractServer,
  options: ListenOptions = {},
): Promise<ListeningContractServer> {
  const host = options.host ?? '127.0.0.1';
  let origin = '';
  const http = createServer((req, res) => {
    void serve(server, req, res, origin);
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const { port } = http.address() as AddressInfo;
  origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url: origin,
    close: () =>
      new Promise<void>((resolve, reject) => {
        http.close((error) => (error ? reject(error) : resolve()));
        http.closeAllConnections();
      }),
  };
}
