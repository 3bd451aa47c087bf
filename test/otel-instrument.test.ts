import { SpanStatusCode } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '../src/index.js';
import { run } from '../src/index.js';
import { instrument, keyHash } from '../src/otel/index.js';
import { setupContract } from './helpers/contract.js';

const { contract, client: makeClient } = setupContract();
const body = { json: { amount: 4200, currency: 'EUR' } };

/** A client instrumented with the SDK's in-memory span exporter and metric reader. */
function instrumented(client: Client = makeClient()) {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const stop = instrument(client, { tracerProvider, meterProvider });
  stops.push(stop);
  /** Sum of a counter's data points whose attributes include `where`. */
  const counted = async (name: string, where: Record<string, unknown> = {}) => {
    await reader.forceFlush();
    const metric = exporter
      .getMetrics()
      .at(-1)
      ?.scopeMetrics.flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === name);
    const points = (metric?.dataPoints ?? []) as { value: number; attributes: Record<string, unknown> }[];
    return points
      .filter((p) => Object.entries(where).every(([k, v]) => p.attributes[k] === v))
      .reduce((sum, p) => sum + p.value, 0);
  };
  return { client, spans: () => spans.getFinishedSpans(), counted, stop };
}
const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

const attemptEvents = (span: { events: { name: string; attributes?: Record<string, unknown> }[] }) =>
  span.events.filter((e) => e.name === 'oncely.attempt').map((e) => e.attributes);

describe('instrument(client): spans', () => {
  it('one span per call, an event per attempt with its status and delay; the key only as a hash', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, match: { method: 'POST' } });
    const { client, spans } = instrumented();
    const intent = await client.intent('checkout:cart_1');
    await intent.post('payments', body);
    const [span, ...others] = spans();
    expect(others).toHaveLength(0);
    expect(span!.name).toBe('oncely checkout');
    expect(span!.attributes).toMatchObject({
      'oncely.intent': 'checkout:cart_1',
      'oncely.outcome': 'success',
      'oncely.attempts': 2,
      'oncely.replayed': false,
      'oncely.key.hash': keyHash(intent.key),
      'http.response.status_code': 201,
    });
    expect(span!.status.code).not.toBe(SpanStatusCode.ERROR);
    const [first, second] = attemptEvents(span!);
    expect(first).toMatchObject({
      'oncely.attempt': 1,
      'http.request.method': 'POST',
      'url.path': '/payments',
      'http.response.status_code': 503,
      'oncely.retry.reason': 'status',
    });
    expect(first!['oncely.retry.delay_ms']).toEqual(expect.any(Number));
    expect(second).toMatchObject({ 'oncely.attempt': 2, 'http.response.status_code': 201, 'oncely.replayed': false });
    expect(JSON.stringify({ a: span!.attributes, e: span!.events, n: span!.name })).not.toContain(intent.key);
    expect(keyHash(intent.key)).toMatch(/^[0-9a-f]{8}$/);
  });

  it('a response dropped after the commit, then replayed: the last attempt says replayed', async () => {
    contract.inject({ fault: 'drop-after-commit', match: { method: 'POST' } });
    const { client, spans, counted } = instrumented();
    await (await client.intent('checkout:cart_2')).post('payments', body);
    const [span] = spans();
    expect(span!.attributes).toMatchObject({ 'oncely.outcome': 'success', 'oncely.replayed': true });
    expect(attemptEvents(span!)).toMatchObject([
      { 'oncely.attempt': 1, 'oncely.retry.reason': 'network' },
      { 'oncely.attempt': 2, 'oncely.replayed': true },
    ]);
    expect(await counted('oncely.replays', { 'oncely.operation': 'checkout' })).toBe(1);
    expect(await counted('oncely.calls', { 'oncely.outcome': 'success' })).toBe(1);
  });

  it('budget exhausted: the span ends as an error with outcome unknown, counted as unknown', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, times: 2, match: { method: 'POST' } });
    const { client, spans, counted } = instrumented(makeClient({ retry: { maxAttempts: 2, baseDelay: 1 } }));
    await expect((await client.intent('payout:p_1')).post('payments', body)).rejects.toMatchObject({
      code: 'OUTCOME_UNKNOWN',
    });
    const [span] = spans();
    expect(span!.name).toBe('oncely payout');
    expect(span!.attributes).toMatchObject({ 'oncely.outcome': 'unknown', 'oncely.attempts': 2 });
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(attemptEvents(span!)).toHaveLength(2);
    expect(await counted('oncely.unknowns')).toBe(1);
    expect(await counted('oncely.attempts')).toBe(2);
    expect(await counted('oncely.retries')).toBe(1);
  });

  it('the key reused with another body (422): mismatch, counted by source', async () => {
    const { client, spans, counted } = instrumented();
    const key = 'reused-key-1';
    await (await makeClient().intent('elsewhere', { key })).post('payments', { json: { amount: 1 } });
    await expect((await client.intent('checkout:cart_3', { key })).post('payments', body)).rejects.toMatchObject({
      code: 'KEY_REUSED',
    });
    const [span] = spans();
    expect(span!.attributes).toMatchObject({ 'oncely.outcome': 'mismatch', 'http.response.status_code': 422 });
    expect(span!.status.code).toBe(SpanStatusCode.ERROR);
    expect(await counted('oncely.mismatches', { 'oncely.mismatch.source': 'server' })).toBe(1);
  });

  it('409 in progress: counted as a conflict, the attempt event carries the 409', async () => {
    contract.inject({ fault: 'status', status: 409, headers: { 'Retry-After': '0' }, match: { method: 'POST' } });
    const { client, spans, counted } = instrumented();
    await (await client.intent('checkout:cart_4')).post('payments', body);
    expect(await counted('oncely.conflicts')).toBe(1);
    expect(attemptEvents(spans()[0]!)[0]).toMatchObject({ 'oncely.attempt': 1, 'http.response.status_code': 409 });
  });

  it('run(): spans and attempts for any transport; a failure ends the span with its code', async () => {
    const { client, spans, counted } = instrumented();
    const intent = await client.intent('refund:r_1');
    await run(intent, async () => 'ok');
    await expect(
      run(await client.intent('refund:r_2'), async () => {
        throw Object.assign(new Error('declined'), { status: 402 });
      }),
    ).rejects.toBeDefined();
    const [ok, failed] = spans();
    expect(ok!.attributes).toMatchObject({ 'oncely.outcome': 'success', 'oncely.attempts': 1 });
    expect(attemptEvents(ok!)).toEqual([{ 'oncely.attempt': 1, 'oncely.replayed': false }]);
    expect(failed!.attributes).toMatchObject({ 'oncely.outcome': 'failure', 'error.type': expect.any(String) });
    expect(await counted('oncely.calls', { 'oncely.operation': 'refund' })).toBe(2);
  });

  it('stop() ends the spans still open and hears nothing more', async () => {
    const hang: typeof fetch = () => new Promise(() => {});
    const { client, spans, stop } = instrumented(makeClient({ fetch: hang, retry: { maxAttempts: 1, timeout: 0 } }));
    void (await client.intent('checkout:cart_5')).post('payments', body).catch(() => {});
    await expect.poll(() => client.stats.attempts).toBe(1);
    stop();
    expect(spans().map((s) => s.attributes['oncely.outcome'])).toEqual(['abandoned']);
  });
});

describe('instrument(client): a wait for another process’s lease', () => {
  it('shows in the call’s span as lease_wait events (taken over from a dead holder)', async () => {
    const { client, spans } = instrumented();
    const intent = await client.intent('payout:9');
    await client.store.update(client.scope, 'payout:9', (r) =>
      r ? { ...r, state: 'in_flight', attempts: 1, lease: { owner: 'dead:1', until: Date.now() - 1 } } : r,
    );
    await intent.post('payments', body);
    const [span] = spans();
    expect(span!.events.find((e) => e.name === 'oncely.lease_wait')?.attributes).toEqual({
      'oncely.lease.phase': 'taken_over',
      'oncely.lease.holder': 'dead:1',
      'oncely.lease.until': expect.any(Number),
    });
  });
});
