/**
 * `oncely/otel`: spans and metrics for an oncely client, and metrics for `oncely/server`. `@opentelemetry/api` is an
 * optional peer dependency; only this entry imports it.
 */
export { type InstrumentOptions, instrument, keyHash } from './instrument.js';
export { type ServerMetricsOptions, serverMetrics } from './server.js';
