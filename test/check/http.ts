/** Reading a request body and answering JSON, for the check's own test servers. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidPayment } from '../servers/listen.js';

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The payment in `text`, or `undefined` once a 400 went out (not JSON, or not a valid
 * payment): the checks every test server makes before its key store.
 */
export function readPayment(res: ServerResponse, text: string): unknown {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    sendJson(res, 400, { title: 'Invalid JSON' });
    return undefined;
  }
  const invalid = invalidPayment(json);
  if (invalid === undefined) return json;
  sendJson(res, 400, { title: 'Invalid payment', detail: invalid });
  return undefined;
}

/** Errors (an object with a `title`) go out as problem+json, the rest as JSON. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const problem = status >= 400;
  res.writeHead(status, { 'Content-Type': problem ? 'application/problem+json' : 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}
