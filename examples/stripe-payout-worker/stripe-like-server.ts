/**
 * A local stand-in for Stripe's `POST /v1/payouts` on 127.0.0.1, speaking Stripe's
 * idempotency rules on the wire, so stripe-node can be pointed at it:
 *
 * - `Idempotency-Key` taken verbatim (bare), scoped per API key;
 * - the first request with a key claims it, creates the payout and stores the answer;
 * - a repeat with the same parameters gets the stored answer, `Idempotent-Replayed: true`;
 * - a repeat while the first is still running gets 409 (`idempotency_key_in_use`);
 * - a repeat with other parameters gets 400 `idempotency_error`.
 *
 * Faults for the example: `dropNext(n)` destroys the socket instead of sending the next
 * n answers that follow a commit (a new payout or a replay of one: the payout is made,
 * the answer is lost); `delayNext(ms)` holds the
 * next new payout that long between claim and commit.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Payout {
  id: string;
  object: 'payout';
  amount: number;
  currency: string;
  description: string | null;
  status: 'pending';
}

interface KeyRow {
  params: string;
  state: 'in_progress' | 'done';
  status?: number;
  body?: string;
}

export interface StripeLikeServer {
  readonly host: string;
  readonly port: number;
  /** Payouts made, in order: what "the bank" would see. */
  readonly payouts: readonly Payout[];
  /** Requests received, with the key each carried and how it was answered. */
  readonly log: readonly { key: string | undefined; status: number | 'dropped'; replayed: boolean }[];
  dropNext(count?: number): void;
  delayNext(ms: number): void;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Request-Id': `req_${Math.random().toString(36).slice(2, 10)}`,
    ...headers,
  });
  res.end(body);
};

const stripeError = (type: string, message: string, code?: string) =>
  JSON.stringify({ error: { type, message, ...(code ? { code } : {}) } });

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startStripeLikeServer(): Promise<StripeLikeServer> {
  const keys = new Map<string, KeyRow>();
  const payouts: Payout[] = [];
  const log: { key: string | undefined; status: number | 'dropped'; replayed: boolean }[] = [];
  let drops = 0;
  let delay = 0;

  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const apiKey = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const key = req.headers['idempotency-key'] as string | undefined;
    const answer = (status: number, body: string, headers: Record<string, string> = {}) => {
      log.push({ key, status, replayed: headers['Idempotent-Replayed'] === 'true' });
      json(res, status, body, headers);
    };
    if (!apiKey) return answer(401, stripeError('invalid_request_error', 'No API key provided.'));
    if (req.method !== 'POST' || req.url !== '/v1/payouts') {
      return answer(404, stripeError('invalid_request_error', `Unrecognized request URL (${req.method}: ${req.url}).`));
    }
    // Stripe compares the parameters of a repeat with the first request's.
    const params = new URLSearchParams(raw);
    params.sort();
    const fingerprint = params.toString();
    const scoped = key === undefined ? undefined : `${apiKey}\n${key}`;
    const row = scoped === undefined ? undefined : keys.get(scoped);

    if (row && row.params !== fingerprint) {
      return answer(
        400,
        stripeError(
          'idempotency_error',
          'Keys for idempotent requests can only be used with the same parameters they were first used with.',
        ),
      );
    }
    if (row?.state === 'in_progress') {
      return answer(
        409,
        stripeError(
          'invalid_request_error',
          'There is currently another in-progress request using this Stripe API key and idempotency key.',
          'idempotency_key_in_use',
        ),
      );
    }
    const drop = () => {
      if (drops === 0) return false;
      drops--;
      log.push({ key, status: 'dropped', replayed: false });
      res.socket?.destroy(); // committed, never answered
      return true;
    };
    if (row?.state === 'done') {
      if (drop()) return;
      return answer(row.status!, row.body!, { 'Idempotency-Key': key!, 'Idempotent-Replayed': 'true' });
    }

    // A new key (or none): claim it, make the payout, store the answer, all before replying.
    const claimed: KeyRow = { params: fingerprint, state: 'in_progress' };
    if (scoped !== undefined) keys.set(scoped, claimed);
    const wait = delay;
    delay = 0;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const amount = Number(params.get('amount'));
    const payout: Payout = {
      id: `po_${(payouts.length + 1).toString().padStart(4, '0')}`,
      object: 'payout',
      amount,
      currency: params.get('currency') ?? 'usd',
      description: params.get('description'),
      status: 'pending',
    };
    payouts.push(payout);
    Object.assign(claimed, { state: 'done', status: 200, body: JSON.stringify(payout) });
    if (drop()) return;
    answer(200, claimed.body!, key === undefined ? {} : { 'Idempotency-Key': key });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { address, port } = server.address() as AddressInfo;
  return {
    host: address,
    port,
    payouts,
    log,
    dropNext: (count = 1) => {
      drops += count;
    },
    delayNext: (ms) => {
      delay = ms;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
