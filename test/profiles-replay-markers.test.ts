/**
 * The default profile (`ietf`) knows a replay by any of the marker spellings real servers
 * use (issue 31 §5): `Idempotent-Replayed` (the draft), `Idempotency-Replayed` and
 * `x-idempotent-replayed`. Against a server of our own that marks replays each way: a
 * replayed success is `replayed: true`, a replayed 500 is the server's stored word (final,
 * one attempt), not a transient error retried until the budget ends.
 */
import { afterEach, expect, test } from 'vitest';
import { createClient, HttpError, MemoryStore } from '../src/index.js';
import { ietf } from '../src/profiles/profiles.js';
import { startReplayMarkerServer } from './servers/replay-marker-server.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const SPELLINGS = ['Idempotent-Replayed', 'Idempotency-Replayed', 'x-idempotent-replayed'];

test('ietf lists the three spellings', () => {
  expect(ietf.replayHeaders).toEqual(['Idempotent-Replayed', 'Idempotency-Replayed', 'X-Idempotent-Replayed']);
});

test.each(SPELLINGS)('a replay marked %s: replayed success, and a replayed 500 is final', async (marker) => {
  const server = await startReplayMarkerServer(marker);
  closers.push(() => server.close());
  const client = () =>
    createClient({ baseUrl: `${server.url}/`, store: new MemoryStore(), retry: { maxAttempts: 3, baseDelay: 1 } });
  const [first, second] = [client(), client()];
  closers.push(async () => {
    await first.close();
    await second.close();
  });
  // Two clients, one key (a resume on another machine): the second gets the stored answer.
  const key = crypto.randomUUID();
  const a = await (await first.intent('checkout', { key })).post('payments', { json: { amount: 1 } });
  const b = await (await second.intent('checkout', { key })).post('payments', { json: { amount: 1 } });
  expect([a.replayed, b.replayed]).toEqual([false, true]);
  expect(b.data).toEqual(a.data);
  expect(server.effects()).toBe(1);

  const failKey = crypto.randomUUID();
  await expect((await first.intent('fail', { key: failKey })).post('fail', { json: {} })).rejects.toBeDefined();
  const before = server.requests();
  const replayed = (await second.intent('fail', { key: failKey })).post('fail', { json: {} });
  await expect(replayed).rejects.toBeInstanceOf(HttpError);
  await expect(replayed).rejects.toMatchObject({ status: 500, replayed: true });
  expect(server.requests() - before).toBe(1); // final: not retried
});
