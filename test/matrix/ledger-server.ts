/**
 * An idempotent payment server on raw `node:net`, so it can misbehave in ways `node:http`
 * refuses (statuses outside 100–599, resets mid-body, bodies that never end). By default it
 * behaves as the seeds say: first request under a key performs the effect and stores the
 * answer, a concurrent one gets 409, a later one the stored answer (`Idempotent-Replayed`),
 * another body under the key 422. Every request, answer and effect is recorded.
 */
import { createServer, type Socket } from 'node:net';

/** How one attempt misbehaves. `ok` is the well-behaved server. */
export const WIRE_FAULTS = [
  'ok',
  'stall-headers',
  'stall-body',
  'drip-body',
  'reset-before-effect',
  'reset-after-effect',
  'reset-mid-body',
  'status-600',
  'status-999',
  'non-json',
  'redirect-302-foreign',
  'redirect-307-foreign',
  'retry-after-absurd',
  'conflict-forever',
  'hold',
  'stall-error-body',
] as const;
export type WireFault = (typeof WIRE_FAULTS)[number];

export interface LedgerRequest {
  method: string;
  url: string;
  key: string | undefined;
  body: string;
  order: string | undefined;
  at: number;
  /** Status the server began to send, when it did. */
  status?: number;
}

export interface Ledger {
  url: string;
  requests: LedgerRequest[];
  effects: { order: string; key: string }[];
  /** Fault for the nth request (1-based) of this server; `ok` when unset. */
  faultFor: (n: number) => WireFault;
  /** Requests waiting in `hold` until released. */
  held: number;
  onHeld: (() => void) | undefined;
  /** Called as each request arrives, before it is answered (a clock jump, another writer). */
  onRequest: ((req: LedgerRequest) => void) | undefined;
  release(): void;
  /** Stop misbehaving: every later request is answered well. */
  lift(): void;
  effectsOf(order: string): number;
  close(): Promise<void>;
}

interface Stored {
  body: string;
  answer?: { status: number; body: string };
}

const reply = (status: number, headers: Record<string, string>, body: string) => {
  const head = Object.entries({ 'content-length': String(Buffer.byteLength(body)), connection: 'close', ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return `HTTP/1.1 ${status} X\r\n${head}\r\n${body}`;
};

export async function ledgerServer(): Promise<Ledger> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const keys = new Map<string, Stored>();
  let lifted = false;
  const releases: (() => void)[] = [];
  const ledger: Ledger = {
    url: '',
    requests: [],
    effects: [],
    faultFor: () => 'ok',
    held: 0,
    onHeld: undefined,
    onRequest: undefined,
    release() {
      for (const r of releases.splice(0)) r();
    },
    lift() {
      lifted = true;
      ledger.release();
      // The network recovers: connections left stalling or dripping are cut.
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
    },
    effectsOf: (order) => ledger.effects.filter((e) => e.order === order).length,
    close: () =>
      new Promise((resolve) => {
        for (const t of timers) clearInterval(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };

  /** The idempotent server itself: performs the effect once per key, stores the answer. */
  function perform(req: LedgerRequest): { status: number; headers: Record<string, string>; body: string } {
    const json = { 'content-type': 'application/json' };
    if (!req.key) return { status: 400, headers: json, body: '{"title":"missing key"}' };
    const stored = keys.get(req.key);
    if (stored && stored.body !== req.body) return { status: 422, headers: json, body: '{"title":"key reused"}' };
    if (stored && !stored.answer) return { status: 409, headers: json, body: '{"title":"in progress"}' };
    if (stored?.answer) return { ...stored.answer, headers: { ...json, 'idempotent-replayed': 'true' } };
    const answer = { status: 201, body: JSON.stringify({ id: `pay_${ledger.effects.length + 1}`, order: req.order }) };
    ledger.effects.push({ order: req.order ?? '?', key: req.key });
    keys.set(req.key, { body: req.body, answer });
    return { ...answer, headers: json };
  }

  async function answer(socket: Socket, req: LedgerRequest, fault: WireFault) {
    const send = (status: number, headers: Record<string, string>, body: string) => {
      req.status = status;
      socket.end(reply(status, headers, body));
    };
    if (fault === 'reset-before-effect') return void socket.resetAndDestroy();
    if (fault === 'conflict-forever') return send(409, { 'content-type': 'application/json' }, '{"title":"busy"}');
    if (fault === 'hold') {
      ledger.held++;
      keys.has(req.key ?? '') || keys.set(req.key ?? '', { body: req.body }); // in progress while held
      ledger.onHeld?.();
      await new Promise<void>((r) => releases.push(r));
      if (keys.get(req.key ?? '')?.answer === undefined) keys.delete(req.key ?? '');
    }
    const done = perform(req);
    if (fault === 'ok' || fault === 'hold') return send(done.status, done.headers, done.body);
    if (fault === 'stall-headers' || fault === 'reset-after-effect') {
      if (fault === 'reset-after-effect') socket.resetAndDestroy();
      return;
    }
    const head = (status: number, headers: Record<string, string>) =>
      `HTTP/1.1 ${status} X\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n`;
    if (fault === 'stall-error-body') {
      req.status = 503;
      return void socket.write(`${head(503, { 'content-type': 'application/json', 'content-length': '1000' })}{`);
    }
    if (fault === 'stall-body' || fault === 'drip-body' || fault === 'reset-mid-body') {
      req.status = done.status;
      socket.write(head(done.status, { ...done.headers, 'content-length': '100000', connection: 'close' }));
      socket.write('{"id":');
      if (fault === 'reset-mid-body') setTimeout(() => socket.resetAndDestroy(), 20);
      if (fault === 'drip-body') {
        const t = setInterval(() => (socket.destroyed ? clearInterval(t) : socket.write(' ')), 100);
        timers.add(t);
      }
      return;
    }
    if (fault === 'status-600' || fault === 'status-999')
      return send(fault === 'status-600' ? 600 : 999, done.headers, done.body);
    if (fault === 'non-json') return send(done.status, { 'content-type': 'application/json' }, '<html>oops</html>');
    if (fault === 'redirect-302-foreign' || fault === 'redirect-307-foreign')
      return send(fault === 'redirect-302-foreign' ? 302 : 307, { location: 'http://127.0.0.2:9/elsewhere' }, '');
    if (fault === 'retry-after-absurd')
      return send(503, { 'retry-after': '999999999', 'content-type': 'application/json' }, '{}');
  }

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = buffer.subarray(0, end).toString().split('\r\n');
      const headers = new Map(
        lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const length = Number(headers.get('content-length') ?? 0);
      if (buffer.length < end + 4 + length) return;
      socket.off('data', onData);
      const [method = '', url = ''] = (lines[0] ?? '').split(' ');
      const body = buffer.subarray(end + 4, end + 4 + length).toString();
      let order: string | undefined;
      try {
        order = (JSON.parse(body) as { order?: string }).order;
      } catch {}
      const req: LedgerRequest = { method, url, key: headers.get('idempotency-key'), body, order, at: Date.now() };
      ledger.requests.push(req);
      ledger.onRequest?.(req);
      void answer(socket, req, lifted ? 'ok' : ledger.faultFor(ledger.requests.length));
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  ledger.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
  return ledger;
}
