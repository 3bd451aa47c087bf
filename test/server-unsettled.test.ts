/** A handler that throws `Unsettled`: rolled back, nothing stored, answered as a held key (409 / 422); the next attempt runs. */
import { expect, it } from 'vitest';
import { createIdempotency, MemoryKeyStore, Unsettled } from '../src/server/index.js';

const request = (key: string) =>
  new Request('https://shop.test/orders', {
    method: 'POST',
    headers: { 'Idempotency-Key': `"${key}"`, 'content-type': 'application/json' },
    body: '{"amount":1}',
  });

it('in_progress, pending_review and mismatch answer 409 / 409 / 422, store nothing, roll back the writes, fire onRequest', async () => {
  const outcomes: string[] = [];
  const idempotency = createIdempotency({ store: new MemoryKeyStore(), onRequest: (e) => outcomes.push(e.outcome) });
  const written: string[] = [];
  let next: Unsettled | undefined;
  const route = idempotency.route('POST /orders', async ({ tx, key }) => {
    tx.onCommit(() => written.push(key));
    if (next) throw next;
    return { status: 201, body: { ok: true } };
  });
  next = new Unsettled('in_progress');
  const busy = await route(request('k1'));
  expect([busy.status, busy.headers.get('retry-after')]).toEqual([409, '1']);
  next = new Unsettled('pending_review', 60, 'Being reconciled.');
  const review = await route(request('k1'));
  expect([review.status, review.headers.get('retry-after'), (await review.json()).detail]).toEqual([
    409,
    '60',
    'Being reconciled.',
  ]);
  next = new Unsettled('mismatch');
  expect((await route(request('k1'))).status).toBe(422);
  expect(written).toEqual([]);
  next = undefined;
  const ran = await route(request('k1'));
  expect([ran.status, ran.headers.get('idempotent-replayed')]).toEqual([201, null]);
  expect(written).toEqual(['k1']);
  expect(outcomes).toEqual(['in_progress', 'in_progress', 'mismatch', 'ran']);
});
