/**
 * Issue 27 §4: the contract mock is `oncely/server`'s core on a memory store plus fault
 * injection, not a second implementation of the protocol. The same requests to the mock and
 * to `createIdempotency` over `MemoryKeyStore` get the same answers, byte for byte; and the
 * mock's own code makes none of the protocol's decisions.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { createContractServer } from '../src/mock/index.js';
import { createIdempotency, MemoryKeyStore } from '../src/server/index.js';

type Step = { key?: string; raw?: string; body: unknown; gate?: boolean };

/** The mock's own headers, added around the core's answer: CORS and the key echoed back. */
const AROUND = new Set(['access-control-allow-origin', 'access-control-expose-headers', 'idempotency-key', 'vary']);

async function view(response: Response) {
  const headers = [...response.headers].filter(([name]) => !AROUND.has(name) && name !== 'date');
  return { status: response.status, headers, body: await response.text() };
}

/** The same handler on both: 201 for an amount, a stored 500 for none, held while `gate` is closed. */
function pair(now: () => number) {
  let open: () => void = () => undefined;
  let gate = Promise.resolve();
  const answer = async (json: unknown) => {
    await gate;
    const amount = (json as { amount?: number } | undefined)?.amount;
    if (amount === undefined) return { status: 500, body: { error: 'no amount' } };
    return { status: 201, headers: { 'x-ledger': 'one' }, body: { id: `pay_${amount}`, amount } };
  };
  const mock = createContractServer({ routes: { 'POST /payments': ({ json }) => answer(json) }, now });
  const core = createIdempotency({ store: new MemoryKeyStore({ now }) });
  const route = core.route('POST /payments', ({ json }) => answer(json));
  const hold = () => {
    gate = new Promise((resolve) => {
      open = resolve;
    });
  };
  return { mock: (r: Request) => mock.fetch(r), core: route, hold, release: () => open() };
}

const request = ({ key, raw, body }: Step) =>
  new Request('https://api.test/payments', {
    method: 'POST',
    headers:
      raw !== undefined ? { 'Idempotency-Key': raw } : key === undefined ? {} : { 'Idempotency-Key': `"${key}"` },
    body: JSON.stringify(body),
  });

describe('the mock answers as the server core does', () => {
  test('claim, replay, 422, 400s, a stored 500 and its replay, a key past retention', async () => {
    let t = 0;
    const both = pair(() => t);
    const steps: Step[] = [
      { key: 'k1', body: { amount: 100 } },
      { key: 'k1', body: { amount: 100 } },
      { key: 'k1', body: { amount: 200 } },
      { body: { amount: 100 } },
      { raw: 'bare-key', body: { amount: 100 } },
      { raw: `"${'x'.repeat(256)}"`, body: { amount: 100 } },
      { key: 'k2', body: {} },
      { key: 'k2', body: {} },
    ];
    const statuses: number[] = [];
    for (const step of steps) {
      const [fromMock, fromCore] = await Promise.all([both.mock(request(step)), both.core(request(step))]);
      const seen = await view(fromMock);
      expect(seen).toEqual(await view(fromCore));
      statuses.push(seen.status);
    }
    expect(statuses).toEqual([201, 201, 422, 400, 400, 400, 500, 500]);
    t += 86_400_000;
    const again = { key: 'k1', body: { amount: 100 } };
    const [fromMock, fromCore] = await Promise.all([both.mock(request(again)), both.core(request(again))]);
    const seen = await view(fromMock);
    expect(seen).toEqual(await view(fromCore));
    expect(seen.headers.some(([name]) => name === 'idempotent-replayed')).toBe(false);
  });

  test('while the first runs: 409 with Retry-After for the same request, 422 for another', async () => {
    const both = pair(() => 0);
    both.hold();
    const first = { key: 'k1', body: { amount: 1 } };
    const running = [both.mock(request(first)), both.core(request(first))];
    for (const step of [first, { key: 'k1', body: { amount: 2 } }]) {
      const [fromMock, fromCore] = await Promise.all([both.mock(request(step)), both.core(request(step))]);
      const seen = await view(fromMock);
      expect(seen).toEqual(await view(fromCore));
      expect(seen.status).toBe(step === first ? 409 : 422);
    }
    both.release();
    const [fromMock, fromCore] = await Promise.all(running);
    expect(await view(fromMock!)).toEqual(await view(fromCore!));
  });
});

test("the mock's own files decide none of the protocol's answers (400, 409, 422, replay)", () => {
  const dir = new URL('../src/mock/', import.meta.url);
  const decisions = /PROBLEM_TYPES\.(keyMissing|keyInvalid|keyReused|inProgress)|status:\s*(409|422)\b/;
  const offenders = readdirSync(dir)
    .filter((file) => file.endsWith('.ts') && file !== 'problem.ts')
    .filter((file) => decisions.test(readFileSync(new URL(file, dir), 'utf8')));
  expect(offenders).toEqual([]);
});
