/**
 * Issue 26 §6: one rule for every transport. A request whose method the profile does not
 * key is not idempotent at the server (Stripe honours the key on POST only): it is sent
 * once and never retried, whether it goes through `intent.request()`, `client.send()` or
 * `intentFetch()`. The rule is `keyedBy` (src/intent/call.ts), applied by the engine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, intentFetch, MemoryStore, type Profile } from '../../src/index.js';
import { ietf, stripe } from '../../src/profiles/index.js';
import { type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A server that performs every request and loses every answer (the connection drops). */
async function losing() {
  const server = await wireServer(() => 'drop');
  servers.push(server);
  return server;
}

const api = (server: WireServer, profile: Profile) =>
  createClient({
    baseUrl: server.url,
    store: new MemoryStore(),
    profile,
    retry: { baseDelay: 1, maxDelay: 5, timeout: 1_000, deadline: 3_000, maxAttempts: 4 },
  });

describe('a method the profile does not key is sent once, through every transport', () => {
  const cases: [string, Profile, string][] = [
    ['stripe', stripe, 'PATCH'],
    ['stripe', stripe, 'DELETE'],
    ['ietf', ietf, 'PUT'],
  ];
  for (const [name, profile, method] of cases)
    for (const transport of ['intentFetch()', 'intent.request()', 'client.send()'] as const)
      it(`${name}, ${method} through ${transport}, answer lost: sent once, unknown`, async () => {
        const server = await losing();
        const client = api(server, profile);
        const call: Promise<unknown> =
          transport === 'client.send()'
            ? client.send('profile:1', method, 'profile', { json: { name: 'a' } })
            : client
                .intent('profile:1')
                .then(
                  (intent): Promise<unknown> =>
                    transport === 'intentFetch()'
                      ? intentFetch(intent, 'profile', { method, body: '{"name":"a"}' })
                      : intent.request(method, 'profile', { json: { name: 'a' } }),
                );
        const error = await call.catch((e: unknown) => e);
        expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, attempts: 1 });
        expect(server.requests).toHaveLength(1);
      });

  it('a keyed method through intentFetch() is still retried under its key (the control)', async () => {
    const server = await losing();
    const intent = await api(server, stripe).intent('pay:1');
    const error = await intentFetch(intent, 'pay', { method: 'POST', body: '{}' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, attempts: 4 });
    expect(new Set(server.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });
});
