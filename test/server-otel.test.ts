/** `serverMetrics()` from oncely/otel over oncely/server's onRequest: requests by operation and outcome, and durations. */
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { expect, it } from 'vitest';
import { serverMetrics } from '../src/otel/index.js';
import { createIdempotency, MemoryKeyStore } from '../src/server/index.js';

it('counts ran, replayed, mismatch and bad_key per operation, with the status; records durations', async () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const idempotency = createIdempotency({ store: new MemoryKeyStore(), onRequest: serverMetrics({ meterProvider }) });
  const route = idempotency.route('POST /payments', async () => ({ status: 201, body: {} }));
  const post = (key: string | undefined, body: string) =>
    route(
      new Request('https://shop.test/payments', {
        method: 'POST',
        headers: key ? { 'Idempotency-Key': key } : {},
        body,
      }),
    );
  await post('"a"', '{"n":1}');
  await post('"a"', '{"n":1}');
  await post('"a"', '{"n":1}');
  await post('"a"', '{"n":2}');
  await post(undefined, '{}');
  await reader.forceFlush();
  const all = exporter
    .getMetrics()
    .at(-1)!
    .scopeMetrics.flatMap((scope) => scope.metrics);
  const requests = all.find((metric) => metric.descriptor.name === 'oncely.server.requests')!;
  const points = (requests.dataPoints as { value: number; attributes: Record<string, unknown> }[]).map((point) => [
    point.attributes['oncely.outcome'],
    point.attributes['http.response.status_code'],
    point.attributes['oncely.operation'],
    point.value,
  ]);
  expect(points).toEqual(
    expect.arrayContaining([
      ['ran', 201, 'POST /payments', 1],
      ['replayed', 201, 'POST /payments', 2],
      ['mismatch', 422, 'POST /payments', 1],
      ['bad_key', 400, 'POST /payments', 1],
    ]),
  );
  expect(points).toHaveLength(4);
  const duration = all.find((metric) => metric.descriptor.name === 'oncely.server.duration')!;
  const counts = (duration.dataPoints as { value: { count: number } }[]).reduce((n, point) => n + point.value.count, 0);
  expect(counts).toBe(5);
});
