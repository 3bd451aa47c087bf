/**
 * Issue 26 §8: a call whose deadline runs out while its body is serialised and fingerprinted
 * says so — `NotSentError` (`reason: 'deadline'`), nothing sent, the intent as it was — not
 * `InProgressError` "another client holds the intent" when nobody does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, MemoryStore, NotSentError } from '../../src/index.js';
import { type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function setup(deadline: number, monotonic?: () => number) {
  const server = await wireServer(() => ({ status: 201, body: {} }));
  servers.push(server);
  const store = new MemoryStore();
  const api = createClient({ baseUrl: server.url, store, retry: { deadline }, ...(monotonic ? { monotonic } : {}) });
  return { server, store, intent: await api.intent('upload:1') };
}

async function expectDeadlineWhileHashing(call: Promise<unknown>, deadline: number) {
  const error = await call.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(NotSentError);
  expect(error).toMatchObject({ code: 'NOT_SENT', reason: 'deadline', sent: false, attempts: 0 });
  expect((error as Error).message).toContain(`deadline of intent "upload:1" (${deadline} ms) ran out`);
  expect((error as Error).message).toContain('fingerprinted');
  expect((error as Error).message).not.toMatch(/another client/i);
}

describe('the deadline runs out while the body is fingerprinted', () => {
  it('a body whose serialisation outlasts the deadline (a clock that moves while it runs): NotSentError, nothing sent', async () => {
    let now = 0;
    const { server, store, intent } = await setup(100, () => now);
    const body = {
      toJSON() {
        now += 150; // the serialisation and hash took longer than the whole deadline
        return { blob: 'x' };
      },
    };
    await expectDeadlineWhileHashing(intent.post('upload', { json: body }), 100);
    expect(server.requests).toHaveLength(0);
    const record = await store.get('default', 'upload:1');
    expect(record).toMatchObject({ state: 'ready', attempts: 0 });
    expect(record?.fingerprint).toBeUndefined();
    expect(intent.state).toBe('ready');
  });

  it('40 MB with a 100 ms deadline (the report): NotSentError, not InProgressError', async () => {
    const { server, store, intent } = await setup(100);
    const big = { blob: 'x'.repeat(40 * 1024 * 1024) };
    await expectDeadlineWhileHashing(intent.post('upload', { json: big }), 100);
    expect(server.requests).toHaveLength(0);
    expect(await store.get('default', 'upload:1')).toMatchObject({ state: 'ready' });
  });
});
