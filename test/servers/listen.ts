/** Listening on 127.0.0.1 and closing, shared by the check's test servers. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Effects (payments created) so far. */
  effects(): number;
  close(): Promise<void>;
}

export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export const closeServer = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The test hook the check's `--slow` uses: `X-Slow: <ms>` delays the effect. */
export const slowMs = (value: string | string[] | undefined): number => {
  const ms = Number(Array.isArray(value) ? value[0] : value);
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, 5_000) : 0;
};

/** The payment the servers accept: `{ amount: number > 0, currency: 'EUR' }`-shaped. */
export function invalidPayment(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'The body must be a JSON object.';
  const { amount, currency } = body as Record<string, unknown>;
  if (typeof amount !== 'number' || !(amount > 0)) return '`amount` must be a positive number.';
  if (typeof currency !== 'string') return '`currency` must be a string.';
  return undefined;
}
