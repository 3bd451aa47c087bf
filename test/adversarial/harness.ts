/** Shared pieces for the attack tests: copied from test/engine/held-lock.test.ts. */
import { WebLocksCoordinator } from '../../browser/cross-tab.js';
import { type Client, createClient, MemoryStore } from '../../src/index.js';
import type { RecordUpdater } from '../../src/store/store.js';
import { type Reply, type WireServer, wireServer } from '../helpers/wire-server.js';

export const closing: (() => unknown)[] = [];
export async function closeAll() {
  for (const close of closing.splice(0).reverse()) await close();
}

export class GatedStore extends MemoryStore {
  log: string[];
  #gate: Promise<void> = Promise.resolve();
  #open = () => {};
  failNext = 0;
  /** Log the last characters of each stored key (`stored in_flight 3f2a`). */
  logKeys = true;
  /** Runs before each update (to interleave other writers). */
  beforeUpdate: (() => Promise<void> | void) | undefined;
  deleteGate: Promise<void> | undefined;
  constructor(log: string[]) {
    super();
    this.log = log;
  }
  holdWrites() {
    const opened = new Promise<void>((resolve) => {
      this.#open = resolve;
    });
    this.#gate = opened;
  }
  releaseWrites() {
    this.#open();
    this.#gate = Promise.resolve();
  }
  override async update(scope: string, name: string, updater: RecordUpdater) {
    await this.#gate;
    await this.beforeUpdate?.();
    if (this.failNext > 0) {
      this.failNext--;
      if (this.logKeys) this.log.push('update failed');
      throw new Error('disk full');
    }
    const stored = await super.update(scope, name, updater);
    this.log.push(`stored ${stored?.state ?? 'nothing'}${stored && this.logKeys ? ` ${stored.key.slice(-4)}` : ''}`);
    return stored;
  }
  override async delete(scope: string, name: string, key?: string) {
    if (this.deleteGate) await this.deleteGate;
    await super.delete(scope, name, key);
    if (this.logKeys) this.log.push('deleted');
  }
}

export class NoteMap {
  readonly map = new Map<string, string>();
  getItem = (name: string) => this.map.get(name) ?? null;
  setItem = (name: string, value: string) => void this.map.set(name, value);
  removeItem = (name: string) => void this.map.delete(name);
  key = (i: number) => [...this.map.keys()][i] ?? null;
  get length() {
    return this.map.size;
  }
}

let channels = 0;
export async function setup(
  handler: (n: number, key: string | undefined) => Reply | Promise<Reply> = () => ({
    status: 201,
    body: { id: 'pay_1' },
  }),
  retry: Record<string, number> = { baseDelay: 1, maxDelay: 5 },
) {
  const log: string[] = [];
  const server: WireServer = await wireServer((req, n) => {
    log.push(`request ${String(req.headers['idempotency-key']).slice(-5, -1)}`);
    return handler(n, req.headers['idempotency-key'] as string | undefined);
  });
  closing.push(() => server.close());
  const store = new GatedStore(log);
  const notes = new NoteMap();
  const channel = `oncely-attack-${process.pid}-${channels++}`;
  const tab = (extra: { notes?: NoteMap | undefined; storeTimeout?: number } = { notes }): Client => {
    const coordinator = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: extra.notes });
    const client = createClient({
      baseUrl: server.url,
      store,
      coordinator,
      retry,
      ...(extra.storeTimeout ? { storeTimeout: extra.storeTimeout } : {}),
    });
    closing.push(() => coordinator.close());
    return client;
  };
  return { log, server, store, notes, channel, tab };
}

export async function heldIntent(client: Client, name = 'checkout:1') {
  const intent = await client.intent(name);
  closing.push(intent.hold());
  await intent.sync();
  return intent;
}

export const keysSent = (server: WireServer) => [...new Set(server.requests.map((r) => r.headers['idempotency-key']))];
