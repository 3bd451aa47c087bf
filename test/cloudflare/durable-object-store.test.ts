/**
 * `DurableObjectStore` (oncely/cloudflare) in local workerd, over SQLite-backed Durable
 * Objects on a local disk: the exported conformance suite run inside the Worker, and a
 * Worker killed (SIGKILL) while its POST is on the wire, restarted over the same storage,
 * resuming under the same key: one charge.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConformanceResult } from '../../src/testing/index.js';
import { type Workerd, workerd } from './workerd.js';

let worker: Workerd;
let server: Server;
let base = '';
const keys: string[] = [];
let charges = 0;
/** While true, the first request of a key is held unanswered (the caller dies first). */
let hold = true;
let received: () => void = () => {};

beforeAll(async () => {
  // A payments endpoint that charges once per key, and holds the first request of a key unanswered while `hold`.
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = String(req.headers['idempotency-key']);
      const first = !keys.includes(key);
      keys.push(key);
      if (first) charges++;
      if (first && hold) {
        received();
        return;
      }
      res.writeHead(201, { 'content-type': 'application/json', ...(!first && { 'idempotent-replayed': 'true' }) });
      res.end(JSON.stringify({ id: 'pay_1' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  worker = await workerd();
}, 60_000);

afterAll(async () => {
  await worker?.remove();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('DurableObjectStore in workerd', () => {
  it('passes the store conformance suite (oncely/testing) inside the Worker', async () => {
    const response = await fetch(`${worker.url}/conformance`);
    expect(response.status).toBe(200);
    const results = (await response.json()) as ConformanceResult[];
    expect(results.filter((r) => r.outcome === 'failed')).toEqual([]);
    expect(results).toHaveLength(30);
    // Only the test of a store that joins the app's transactions is skipped: there are none here.
    expect(results.filter((r) => r.outcome === 'skipped').map((r) => r.test)).toEqual([
      'identity (a record is known by its key, not its version) › a handle formed in a transaction that rolled back never writes over the record another client committed',
    ]);
  }, 60_000);

  it('createClient without a store, in workerd, names DurableObjectStore and never a store that cannot run there', async () => {
    const message = await (await fetch(`${worker.url}/no-store`)).text();
    expect(message).toMatch(/^createClient needs a store here/);
    expect(message).toContain('new DurableObjectStore(env.INTENTS)` from "oncely/cloudflare"');
    expect(message).not.toMatch(/SQLite|Sqlite|IndexedDB|IdbStore/);
  });

  /** POSTs a checkout, kills workerd once the server holds it, restarts it and POSTs again: the second answer and every key the server saw. */
  async function killAndResume(query: string) {
    keys.length = 0;
    charges = 0;
    hold = true;
    const checkout = `${worker.url}/checkout?base=${encodeURIComponent(base)}${query}`;
    const arrived = new Promise<void>((resolve) => {
      received = resolve;
    });
    const first = fetch(checkout, { method: 'POST' }).then(
      (r) => r.status,
      (error: unknown) => error,
    );
    await arrived; // the intent is in_flight in its store and its POST at the server
    await worker.kill('SIGKILL');
    expect(await first).toBeInstanceOf(Error); // the caller never got an answer
    expect(keys).toHaveLength(1);
    hold = false;
    await worker.start();
    const response = await fetch(checkout, { method: 'POST' });
    return (await response.json()) as { status: number; key: string; replayed: boolean };
  }

  it('a Worker killed mid-POST and restarted resumes under the same key: one charge', async () => {
    const body = await killAndResume('');
    // The header carries the key as a Structured Field string (the ietf profile): quoted.
    expect(body).toMatchObject({ status: 201, replayed: true });
    expect(JSON.stringify(body.key)).toBe(keys[0]);
    expect(new Set(keys)).toEqual(new Set([keys[0]]));
    expect(charges).toBe(1);
  }, 60_000);

  it('the control: with its keys in the isolate memory, the restarted Worker mints a new key and charges twice', async () => {
    const body = await killAndResume('&store=memory');
    expect(body).toMatchObject({ status: 201, replayed: false });
    expect(new Set(keys).size).toBe(2);
    expect(charges).toBe(2);
  }, 60_000);
});
