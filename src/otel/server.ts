/**
 * OpenTelemetry metrics for `oncely/server`, from its `onRequest` events: requests by
 * operation and outcome (the replay rate, 409s and 422s per operation) and the time to the
 * answer. No key, no scope in attributes: they are not low-cardinality.
 */
import { type MeterProvider, metrics } from '@opentelemetry/api';
import type { RequestEvent } from '../server/idempotency.js';

export interface ServerMetricsOptions {
  /** @default the global meter provider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
}

/**
 * An `onRequest` observer for `createIdempotency` that records `oncely.server.requests`
 * (attributes `oncely.operation`, `oncely.outcome`, `http.response.status_code`) and
 * `oncely.server.duration` (ms). Replay rate = requests{outcome=replayed} /
 * requests{outcome=ran or replayed}; a rate of exactly zero over a week means the
 * mechanism is not wired in.
 *
 * @example
 * createIdempotency({ store, onRequest: serverMetrics() });
 */
export function serverMetrics(options: ServerMetricsOptions = {}): (event: RequestEvent) => void {
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter('oncely');
  const requests = meter.createCounter('oncely.server.requests', {
    description: 'Requests on idempotent routes, by oncely.operation and oncely.outcome.',
  });
  const duration = meter.createHistogram('oncely.server.duration', {
    description: 'Time to the answer of a request on an idempotent route.',
    unit: 'ms',
  });
  return (event) => {
    const attributes = {
      'oncely.operation': event.operation,
      'oncely.outcome': event.outcome,
      ...(event.status === undefined ? {} : { 'http.response.status_code': event.status }),
    };
    requests.add(1, attributes);
    if (event.ms !== undefined) duration.record(event.ms, attributes);
  };
}
