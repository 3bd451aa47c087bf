/** Issue 18 §3: no wait is unbounded; a tab waiting for another tab's Web Lock ends at its deadline. */
import { afterEach, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../../browser/cross-tab.js';
import { createClient, MemoryStore } from '../../src/index.js';
import { wireServer } from '../helpers/wire-server.js';
import { closeAll, closing } from './harness.js';

afterEach(closeAll);

it('a tab behind another tab’s long call ends at its deadline: InProgressError (holder tab), nothing sent', async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const server = await wireServer(async () => {
    await held;
    return { status: 201, body: {} };
  });
  closing.push(() => server.close());
  const store = new MemoryStore();
  const channel = `oncely-tab-wait-${process.pid}`;
  const tab = (deadline: number) => {
    const coordinator = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:` });
    closing.push(() => coordinator.close());
    return createClient({ baseUrl: server.url, store, coordinator, retry: { timeout: 10_000, deadline } });
  };
  const first = (await tab(20_000).intent('checkout:1')).post('pay', { json: {} });
  await expect.poll(() => server.requests.length).toBe(1);
  const start = performance.now();
  const error = await (await tab(300).intent('checkout:1')).post('pay', { json: {} }).catch((e: unknown) => e);
  expect(error).toMatchObject({ code: 'IN_PROGRESS', holder: 'tab', sent: false });
  expect(performance.now() - start).toBeLessThan(300 + 500);
  expect(server.requests).toHaveLength(1);
  release();
  await first;
});
