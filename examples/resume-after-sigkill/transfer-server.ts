/**
 * A transfers API on 127.0.0.1 with the draft's idempotency rules (`Idempotency-Key` as
 * a quoted string; replay with `Idempotent-Replayed: true`; 409 + `Retry-After` while in
 * progress; 422 for a key reused with another body) and one fault: while `holding`, a new
 * transfer is not answered. Every other held request is committed first (the money moved,
 * the answer never comes); the others wait before committing and are rolled back, their
 * key released, when the client goes away.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Transfer {
  id: string;
  job: string;
  amount: number;
}

interface KeyRow {
  body: string;
  state: 'in_progress' | 'done';
  answer?: string;
}

export interface TransferServer {
  readonly url: string;
  /** Transfers committed, in order. */
  readonly transfers: readonly Transfer[];
  /** Every request to `POST /transfers`: the job it was for and the key it carried. */
  readonly requests: readonly { job: string; key: string }[];
  /** Requests held right now (not answered). */
  readonly held: number;
  /** While true, new transfers are held (see above). */
  holding: boolean;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const type = status >= 400 ? 'application/problem+json' : 'application/json';
  res.writeHead(status, { 'Content-Type': type, ...headers }).end(JSON.stringify(body));
};

export async function startTransferServer(): Promise<TransferServer> {
  const keys = new Map<string, KeyRow>();
  const transfers: Transfer[] = [];
  const requests: { job: string; key: string }[] = [];
  let held = 0;
  let holdCount = 0;

  const commit = (row: KeyRow, job: string, amount: number) => {
    const transfer = { id: `tr_${transfers.length + 1}`, job, amount };
    transfers.push(transfer);
    Object.assign(row, { state: 'done', answer: JSON.stringify(transfer) });
    return transfer;
  };

  const state: TransferServer = {
    url: '',
    transfers,
    requests,
    get held() {
      return held;
    },
    holding: false,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };

  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/transfers') return send(res, 404, { title: 'Not Found', status: 404 });
    const key = /^"([^"\\]{1,255})"$/.exec(req.headers['idempotency-key'] as string)?.[1];
    if (!key) return send(res, 400, { title: 'Idempotency-Key missing or invalid', status: 400 });
    const { job, amount } = JSON.parse(raw) as { job: string; amount: number };
    requests.push({ job, key });

    const row = keys.get(key);
    // The same client sends the same bytes on every attempt, so bytes are compared here.
    if (row && row.body !== raw) return send(res, 422, { title: 'Idempotency-Key reused', status: 422 });
    if (row?.state === 'in_progress') {
      return send(res, 409, { title: 'A request with this key is in progress', status: 409 }, { 'Retry-After': '1' });
    }
    if (row?.state === 'done') {
      res.writeHead(201, { 'Content-Type': 'application/json', 'Idempotent-Replayed': 'true' }).end(row.answer);
      return;
    }

    const claimed: KeyRow = { body: raw, state: 'in_progress' };
    keys.set(key, claimed);
    if (!state.holding) return send(res, 201, commit(claimed, job, amount));

    held++;
    const commitFirst = holdCount++ % 2 === 0;
    if (commitFirst) commit(claimed, job, amount); // the money moved; the answer will never come
    res.on('close', () => {
      held--;
      if (!commitFirst) keys.delete(key); // rolled back: the key is free, a resend runs it
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, { url: `http://127.0.0.1:${port}/` });
}
