/**
 * A real HTTP server on 127.0.0.1 for wire tests: each request is logged with its key
 * header and body and answered by the test's handler, or its connection destroyed.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type Reply = { status: number; headers?: Record<string, string>; body?: unknown } | 'drop' | 'hang';

export interface WireServer {
  /** `http://127.0.0.1:PORT/` */
  url: string;
  origin: string;
  requests: Received[];
  close(): Promise<void>;
}

export async function wireServer(
  handler: (request: Received, n: number) => Reply | Promise<Reply>,
): Promise<WireServer> {
  const requests: Received[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const received = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    };
    requests.push(received);
    const reply = await handler(received, requests.length);
    if (reply === 'hang') return;
    if (reply === 'drop') {
      req.socket.destroy();
      return;
    }
    const json = reply.body !== undefined && typeof reply.body !== 'string';
    res.writeHead(reply.status, { ...(json ? { 'content-type': 'application/json' } : {}), ...reply.headers });
    res.end(json ? JSON.stringify(reply.body) : ((reply.body as string | undefined) ?? ''));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
