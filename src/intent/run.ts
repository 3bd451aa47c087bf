import { HttpError, InvalidArgumentError, KeyReusedError, TransportError } from '../errors.js';
import { answerReport, readCopy, withTimeout } from '../http/attempt.js';
import { reportThrown, reportValue } from '../http/thrown.js';
import type { CallPlan, IntentHandle } from './call.js';
import { lastAnswer } from './ending.js';
import { fingerprint } from './fingerprint.js';
import { callWith, type Intent } from './intent.js';
import type { RunContext, RunOptions } from './options.js';
import { serializeBody } from './request-spec.js';

/**
 * Runs any transport (stripe-node, GraphQL, your fetch) under `intent`: oncely owns the key
 * and the retries; your function gets `{ key, headers, attempt, signal, fetch }` and must send
 * the key on every request it makes. Turn its own retries off (stripe-node:
 * `maxNetworkRetries: 0`), or each of oncely's attempts multiplies them.
 * @example await run(intent, ({ key }) => stripe.payouts.create(params, { idempotencyKey: key }), { request: params })
 */
export function run<T>(intent: Intent, fn: (context: RunContext) => Promise<T>, options: RunOptions = {}): Promise<T> {
  return callWith(intent, (h) => runPlan(h, fn, options));
}

function runPlan<T>(h: IntentHandle, fn: (context: RunContext) => Promise<T>, options: RunOptions): CallPlan<T, T> {
  const { ctx } = h;
  const where = { intent: h.name, scope: h.scope };
  if (typeof fn !== 'function') throw new InvalidArgumentError('run() needs a function that sends the request.', where);
  const request = serializeBody(options.request ?? null, undefined, where)!;
  const headers = { [ctx.profile.header]: ctx.profile.encodeKey(h.key) };
  return {
    fingerprint: fingerprint({ method: 'RUN', path: h.name, body: request }),
    signal: options.signal,
    method: 'RUN',
    url: h.name,
    keyed: true, // the function is handed the key for every request it makes
    attempt: async (attempt, timeout, parent) => {
      const bounded = withTimeout(parent, timeout);
      // The last answer through the context's fetch: a parsed body does not hide its status.
      let seen: Response | undefined;
      const fetch = async (input: string | URL | Request, init: RequestInit = {}) => {
        const sent = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
        for (const [name, value] of Object.entries(headers)) sent.set(name, value);
        const response = await ctx.fetch(input, { ...init, headers: sent, signal: bounded.signal });
        seen = response;
        return response;
      };
      try {
        // The value's own answer (a Response's body) is read within the attempt's bound too.
        return await bounded.race(
          Promise.resolve()
            .then(() => fn({ key: h.key, headers: { ...headers }, attempt, signal: bounded.signal, fetch }))
            .then(async (value) => {
              if (value instanceof Response || !seen || seen.ok) return reportValue(value, ctx.profile);
              const body = seen.bodyUsed ? undefined : (await readCopy(seen)).body;
              return answerReport(ctx.profile, { status: seen.status, headers: seen.headers, body }, value);
            }),
        );
      } catch (error) {
        if (bounded.signal.aborted)
          return { outcome: 'no_answer', replayed: false, sent: true, error: bounded.signal.reason };
        return reportThrown(error, ctx.profile, options.classify);
      } finally {
        bounded.clear();
      }
    },
    finish: (verdict, end, context) => {
      const { error } = end.last;
      if (verdict.result === 'ok') return end.last.value as T;
      const answer = lastAnswer(end);
      if (verdict.result === 'key_reused')
        throw new KeyReusedError(answer ?? { status: 0, body: undefined }, { ...context, cause: error });
      if (answer) throw new HttpError({ ...answer, replayed: end.last.replayed }, { ...context, cause: error });
      throw new TransportError({ ...context, cause: error });
    },
  };
}
