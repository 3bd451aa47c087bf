/**
 * Events keep the key as errors do (issue 29 §6): readable as `event.key` (and a state
 * event's `record.key`), but a log line made with `JSON.stringify(event)` or
 * `util.inspect(event)` (what `console.log` prints) leaves it out.
 */
import { inspect } from 'node:util';
import { expect, it } from 'vitest';
import { createClient, MemoryStore, type OncelyEvent } from '../src/index.js';
import { createContractServer } from '../src/mock/index.js';

it('a log listener printing events never prints the key; listeners still read it', async () => {
  const contract = createContractServer();
  const store = new MemoryStore();
  const events: OncelyEvent[] = [];
  const logged: string[] = [];
  const client = createClient({
    baseUrl: 'https://api.test/',
    store,
    fetch: contract.fetch as typeof fetch,
    onEvent: (event) => {
      events.push(event);
      logged.push(JSON.stringify(event), inspect(event, { depth: 5 }));
    },
  });
  const intent = await client.intent('checkout:1');
  await intent.post('payments', { json: { amount: 1 } });
  await intent.post('payments', { json: { amount: 1 } });

  const types = new Set(events.map((event) => event.type));
  expect(types).toContain('attempt');
  expect(types).toContain('success');
  expect(types).toContain('state');
  for (const line of logged) expect(line).not.toContain(intent.key);
  for (const event of events) {
    if (event.type === 'state') expect(event.record.key).toBe(intent.key);
    else if ('key' in event) expect(event.key).toBe(intent.key);
  }
  // The store's record is the engine's, not the listener's copy: stored whole.
  expect(JSON.stringify(await store.get('default', 'checkout:1'))).toContain(intent.key);
  await client.close();
});
