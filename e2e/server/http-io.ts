/** Small helpers for reading and writing JSON over node:http. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Problem } from './problem.ts';

export const MAX_BODY_BYTES = 64 * 1024;

export class BodyTooLarge extends Error {}

export async function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  contentType = 'application/json',
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': `${contentType}; charset=utf-8`,
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export function sendProblem(res: ServerResponse, problem: Problem, headers: Record<string, string> = {}): void {
  sendJson(res, problem.status, problem, headers, 'application/problem+json');
}
