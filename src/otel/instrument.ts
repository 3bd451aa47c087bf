/**
 * OpenTelemetry for an oncely client, built on its events: one span per call (from its
 * first `attempt` to `success` / `failure` / `unknown` / `mismatch`) with an event per
 * attempt, and counters for attempts, retries, replays, conflicts, mismatches, unknown
 * outcomes and calls by outcome. The key never appears in clear: spans carry an 8-hex hash.
 */
import {
  type Attributes,
  type MeterProvider,
  metrics,
  type Span,
  SpanStatusCode,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { Client } from '../client.js';
import type { OncelyEvent } from '../events.js';

export interface InstrumentOptions {
  /** @default the global tracer provider (`trace.getTracerProvider()`) */
  tracerProvider?: TracerProvider;
  /** @default the global meter provider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
  /**
   * The intent's low-cardinality name for metric attributes and span names: intent names
   * carry ids (`checkout:cart_123`), which metrics must not.
   * @default the name up to its first ':' (`checkout`)
   */
  operation?: (intent: string) => string;
}

const SCOPE = 'oncely';
const defaultOperation = (intent: string) => intent.split(':', 1)[0] || 'intent';

/**
 * FNV-1a, 32 bits, as 8 hex digits: enough to correlate a call's spans and logs, useless to
 * replay a request (the key has at least 74 random bits).
 */
export function keyHash(key: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(16).padStart(8, '0');
}

/** One attempt, reported as a span event once its answer (or the next attempt) is known. */
interface OpenAttempt {
  attributes: Attributes;
  time: number;
}

interface OpenCall {
  span: Span;
  attempt: OpenAttempt | undefined;
}

type CallEvent = Extract<OncelyEvent, { intent: string }>;

/**
 * Instruments `client`; returns a function that stops (and ends the spans still open).
 *
 * @example
 * import { instrument } from 'oncely/otel';
 * const stop = instrument(api); // global providers, or { tracerProvider, meterProvider }
 */
export function instrument(client: Pick<Client, 'on'>, options: InstrumentOptions = {}): () => void {
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
  const operation = options.operation ?? defaultOperation;
  const counter = (name: string, description: string) => meter.createCounter(`oncely.${name}`, { description });
  const count = {
    attempt: counter('attempts', 'Attempts sent (first sends and retries).'),
    retry: counter('retries', 'Retries scheduled with the same key.'),
    replay: counter('replays', 'Answers the server replayed from its stored result: no new effect.'),
    conflict: counter('conflicts', 'Answers "still in progress" (409).'),
    mismatch: counter('mismatches', 'Requests refused as a reuse of the key with another request.'),
    unknown: counter('unknowns', 'Calls that ended with the outcome unknown (key kept for a resume).'),
    call: counter('calls', 'Calls ended, by oncely.outcome; replay rate = replays / calls{outcome=success}.'),
  };
  const open = new Map<string, OpenCall>();

  const flush = (call: OpenCall, extra: Attributes = {}) => {
    if (!call.attempt) return;
    call.span.addEvent('oncely.attempt', { ...call.attempt.attributes, ...extra }, call.attempt.time);
    call.attempt = undefined;
  };

  const end = (id: string, outcome: string, attributes: Attributes, error?: string) => {
    const call = open.get(id);
    if (!call) return;
    open.delete(id);
    flush(call, attemptAnswer(attributes));
    call.span.setAttributes({ ...attributes, 'oncely.outcome': outcome });
    if (error) call.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    call.span.end();
  };

  const onEvent = (event: OncelyEvent) => {
    if (!('intent' in event)) return;
    const id = JSON.stringify([event.scope, event.intent]);
    const kind = operation(event.intent);
    const metric: Attributes = { 'oncely.operation': kind };
    let call = open.get(id);
    switch (event.type) {
      case 'attempt':
        count.attempt.add(1, metric);
        if (!call) {
          call = {
            span: tracer.startSpan(`oncely ${kind}`, { attributes: callAttributes(event) }),
            attempt: undefined,
          };
          open.set(id, call);
        }
        flush(call);
        call.attempt = { attributes: attemptAttributes(event), time: Date.now() };
        return;
      case 'lease_wait':
        // Before any attempt: the call's span starts with its wait for another client's lease.
        if (!call) {
          call = {
            span: tracer.startSpan(`oncely ${kind}`, { attributes: callAttributes(event) }),
            attempt: undefined,
          };
          open.set(id, call);
        }
        call.span.addEvent('oncely.lease_wait', {
          'oncely.lease.phase': event.phase,
          'oncely.lease.holder': event.holder,
          'oncely.lease.until': event.until,
        });
        return;
      case 'retry':
        count.retry.add(1, { ...metric, 'oncely.retry.reason': event.reason });
        if (call)
          flush(call, {
            'oncely.retry.delay_ms': event.delay,
            'oncely.retry.reason': event.reason,
            ...(event.status ? { 'http.response.status_code': event.status } : {}),
          });
        return;
      case 'conflict':
        count.conflict.add(1, metric);
        if (call?.attempt) call.attempt.attributes['http.response.status_code'] = event.status;
        return;
      case 'replay':
        count.replay.add(1, metric);
        return;
      case 'mismatch':
        count.mismatch.add(1, { ...metric, 'oncely.mismatch.source': event.source });
        count.call.add(1, { ...metric, 'oncely.outcome': 'mismatch' });
        end(id, 'mismatch', status(event.status), 'the key was used with another request');
        return;
      case 'unknown':
        count.unknown.add(1, metric);
        count.call.add(1, { ...metric, 'oncely.outcome': 'unknown' });
        end(id, 'unknown', { 'oncely.attempts': event.attempts }, 'outcome unknown; the key is kept');
        return;
      case 'success':
        count.call.add(1, { ...metric, 'oncely.outcome': 'success' });
        end(id, 'success', {
          'oncely.attempts': event.attempts,
          'oncely.replayed': event.replayed,
          ...status(event.status),
        });
        return;
      case 'failure':
        count.call.add(1, { ...metric, 'oncely.outcome': 'failure' });
        end(
          id,
          'failure',
          { 'oncely.attempts': event.attempts, 'error.type': event.code, ...status(event.status) },
          event.code,
        );
        return;
    }
  };

  const off = client.on('*', onEvent);
  return () => {
    off();
    for (const id of [...open.keys()]) end(id, 'abandoned', {});
  };
}

const status = (code: number | undefined): Attributes => (code ? { 'http.response.status_code': code } : {});

const callAttributes = (event: CallEvent): Attributes => ({
  'oncely.intent': event.intent,
  'oncely.scope': event.scope,
  'oncely.key.hash': keyHash(event.key),
});

function attemptAttributes(event: Extract<OncelyEvent, { type: 'attempt' }>): Attributes {
  const attributes: Attributes = { 'oncely.attempt': event.attempt };
  if (event.method === 'RUN') return attributes;
  attributes['http.request.method'] = event.method;
  // The path only: a query string can carry secrets.
  if (URL.canParse(event.url)) attributes['url.path'] = new URL(event.url).pathname;
  return attributes;
}

/** What the call's end says about its last attempt. */
function attemptAnswer(attributes: Attributes): Attributes {
  const answer: Attributes = {};
  if (attributes['http.response.status_code'] !== undefined)
    answer['http.response.status_code'] = attributes['http.response.status_code'];
  if (attributes['oncely.replayed'] !== undefined) answer['oncely.replayed'] = attributes['oncely.replayed'];
  return answer;
}
