/**
 * `oncely/otel`: spans and metrics for an oncely client. `@opentelemetry/api` is an
 * optional peer dependency; only this entry imports it.
 */
export { type InstrumentOptions, instrument, keyHash } from './instrument.js';
