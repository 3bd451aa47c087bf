import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { canonicalJson } from '../src/intent/canonical-json.js';
import { mintKey } from '../src/intent/keys.js';
import { sha256, sha256Bytes, sha256Text } from '../src/intent/sha256.js';
import { setupContract } from './helpers/contract.js';

const { contract, client } = setupContract();
const body = { amount: 4200, currency: 'eur' };

/** ky sends exactly one attempt per call oncely makes of it: its hooks see every attempt, and every body. */
describe('request and response bodies with ky options', () => {
  it('hooks see both bodies, on every attempt', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, times: 1 });
    const sent: unknown[] = [];
    const answers: unknown[] = [];
    const api = client({
      ky: {
        hooks: {
          beforeRequest: [async ({ request }) => void sent.push(await request.clone().json())],
          afterResponse: [async ({ response }) => void answers.push(await response.clone().json())],
        },
      },
    });
    const intent = await api.intent('checkout:hooks');
    const res = await intent.post('payments', { json: body });
    expect(res).toMatchObject({ status: 201, attempts: 2 });
    expect(sent).toEqual([body, body]);
    expect(answers).toHaveLength(2);
    expect(answers[1]).toEqual(expect.objectContaining({ amount: 4200 }));
    expect(contract.effects(intent.key)).toBe(1);
  });

  it('a custom fetch that reads only the Request gets the body on every attempt', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, times: 2 });
    const bodies: unknown[] = [];
    const api = client({
      fetch: async (input) => {
        const request = input as Request;
        bodies.push(await request.clone().json());
        return globalThis.fetch(request);
      },
    });
    const intent = await api.intent('checkout:fetch');
    const res = await intent.post('payments', { json: body });
    expect(res).toMatchObject({ status: 201, attempts: 3, replayed: false });
    expect(bodies).toEqual([body, body, body]);
    expect(contract.effects(intent.key)).toBe(1);
  });
});

describe('fingerprints and keys', () => {
  it("Node's synchronous hash gives Web Crypto's digest: stored fingerprints stay valid", async () => {
    const body = canonicalJson({ b: [1, 2], a: 'é 💳 \ud800 "quoted"' });
    const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(body));
    expect(await sha256(body)).toBe(Buffer.from(digest).toString('hex'));
  });

  it('the plain JavaScript SHA-256 (browsers) gives the digest of node:crypto for every length around the block edges', () => {
    const bytes = new Uint8Array(300).map((_, i) => (i * 151 + 7) & 0xff);
    for (let length = 0; length <= bytes.length; length++) {
      const slice = bytes.subarray(0, length);
      expect(sha256Bytes(slice), `length ${length}`).toBe(createHash('sha256').update(slice).digest('hex'));
    }
    const big = new Uint8Array(100_000).map((_, i) => (i * 31) & 0xff);
    expect(sha256Bytes(big)).toBe(createHash('sha256').update(big).digest('hex'));
  });

  it('the plain JavaScript SHA-256 of a string (ASCII read as is, the rest encoded) gives the digest of node:crypto, whatever the order of lengths', () => {
    const texts = ['', 'a', 'x'.repeat(55), 'x'.repeat(56), 'x'.repeat(64), 'x'.repeat(5_000), '{"amount":1999}'];
    texts.push('é 💳 \ud800 "quoted"', `${'y'.repeat(60)}€`, 'x'.repeat(3));
    // Long after short and short after long: the buffers a digest reuses carry nothing over.
    for (const text of [...texts, ...texts.reverse()])
      expect(sha256Text(text), `length ${text.length}`).toBe(createHash('sha256').update(text).digest('hex'));
  });

  it('v7 keys minted in one millisecond stay in order and unique', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.parse('2026-11-30T12:00:00Z'));
      const keys = Array.from({ length: 1_000 }, () => mintKey('v7', 's', 'n'));
      expect(new Set(keys).size).toBe(keys.length);
      expect([...keys].sort()).toEqual(keys);
      for (const key of keys)
        expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    } finally {
      vi.useRealTimers();
    }
  });
});
