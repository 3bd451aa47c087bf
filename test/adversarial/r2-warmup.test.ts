/**
 * From a second adversarial review of the kept lock (held).
 *
 * warmUp (src/client.ts): run once per module after a hold's first read. Looks for side
 * effects on the app: global fetch, unhandled rejections, events/stats of the app's client,
 * BroadcastChannel traffic, missing Response/Headers.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
afterEach(() => {
  vi.unstubAllGlobals();
  vi.resetModules();
});

describe('warmUp', () => {
  it('no global fetch, no events or stats on the app client, no channel message, no unhandled rejection', async () => {
    const { WebLocksCoordinator } = await import('../../browser/cross-tab.js');
    const { createClient, MemoryStore } = await import('../../src/index.js');
    const warm: string[] = [];
    const update = MemoryStore.prototype.update;
    MemoryStore.prototype.update = function (
      this: InstanceType<typeof MemoryStore>,
      ...args: Parameters<typeof update>
    ) {
      if (args[1] === 'warm-up') warm.push('update');
      return update.apply(this, args);
    };
    const realFetch = globalThis.fetch;
    const globalFetch = vi.fn(realFetch);
    vi.stubGlobal('fetch', globalFetch);
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const channel = `oncely-attack2-warm-${process.pid}`;
    const heard: unknown[] = [];
    const listener = new BroadcastChannel(channel);
    listener.onmessage = (e) => heard.push(e.data);
    const coordinator = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined });
    const events: string[] = [];
    const client = createClient({
      baseUrl: 'http://127.0.0.1:9/',
      store: new MemoryStore(),
      coordinator,
      onEvent: (e) => events.push(e.type),
    });
    const intent = await client.intent('checkout:1');
    const release = intent.hold();
    await intent.sync();
    events.length = 0;
    heard.length = 0;
    await delay(300);
    release();
    coordinator.close();
    listener.close();
    process.off('unhandledRejection', onUnhandled);
    MemoryStore.prototype.update = update;
    expect(warm.length).toBeGreaterThan(0); // the warm-up did run
    expect({
      globalFetch: globalFetch.mock.calls.length,
      events,
      stats: client.stats,
      heard: heard.length,
      unhandled,
    }).toMatchObject({
      globalFetch: 0,
      events: [],
      heard: 0,
      unhandled: [],
    });
  });

  it('without Response/Headers (old runtimes, a test env): nothing thrown, nothing unhandled', async () => {
    vi.stubGlobal('Response', undefined);
    const { WebLocksCoordinator } = await import('../../browser/cross-tab.js');
    const { createClient, MemoryStore } = await import('../../src/index.js');
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    const coordinator = new WebLocksCoordinator({
      channel: `w2-${process.pid}`,
      lockPrefix: `w2-${process.pid}:`,
      notes: undefined,
    });
    const client = createClient({ baseUrl: 'http://127.0.0.1:9/', store: new MemoryStore(), coordinator });
    const intent = await client.intent('checkout:1');
    const release = intent.hold();
    await intent.sync();
    await delay(300);
    release();
    coordinator.close();
    process.off('unhandledRejection', onUnhandled);
    expect(unhandled).toEqual([]);
  });
});
