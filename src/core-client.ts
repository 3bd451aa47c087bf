/**
 * `createClient` as the core entry exports it (`oncely` in edge and worker runtimes): there
 * is no default store there, so a missing one is told what to pass — only stores that can
 * run on the runtime it finds. The browser and Node entries default the store, so a page
 * does not carry this text.
 */
import { type Client, type ClientOptions, createClient as createAnyClient } from './client.js';

const TESTS = 'or `new MemoryStore()` for tests (its keys die with the isolate)';

/** The runtime this code runs on, as far as the no-store message needs it. */
export function detectRuntime(): 'workerd' | 'edge-light' | 'deno' | 'bun' | 'node' | 'browser' | 'unknown' {
  const g = globalThis as Record<string, unknown> & { navigator?: { userAgent?: unknown } };
  if (g.navigator?.userAgent === 'Cloudflare-Workers') return 'workerd';
  if (typeof g.EdgeRuntime === 'string') return 'edge-light';
  if (g.Deno !== undefined) return 'deno';
  if (g.Bun !== undefined) return 'bun';
  if (typeof (g.process as { versions?: { node?: unknown } } | undefined)?.versions?.node === 'string') return 'node';
  if (g.indexedDB !== undefined && g.document !== undefined) return 'browser';
  return 'unknown';
}

/** Why `createClient` has no store here, and the stores that run on `runtime`. */
export function noStoreMessage(runtime = detectRuntime()): string {
  const stores = {
    workerd:
      '`store: new DurableObjectStore(env.INTENTS)` from "oncely/cloudflare" (Durable Objects; not Workers KV, which cannot hold a claim), `new PostgresStore({ pool })` from "oncely/postgres" with `pg` under `nodejs_compat`, or your own `Store`',
    'edge-light':
      '`store: new PostgresStore({ pool })` from "oncely/postgres" with a `pg`-compatible pool that runs on this edge runtime (`pg` itself needs TCP sockets), or your own `Store`',
    node: '`store: new PostgresStore({ pool })` from "oncely/postgres" (a fleet) or `new SqliteStore()` from "oncely/node" (one machine; "oncely" resolved with the "node" condition defaults to it)',
    browser:
      '`store: new IdbStore()` from "oncely/browser" ("oncely" resolved with the "browser" condition defaults to it)',
    unknown:
      'your own `Store`, or `store: new PostgresStore({ pool })` from "oncely/postgres" where a PostgreSQL driver runs',
  };
  const runs = runtime === 'bun' || runtime === 'deno' ? stores.node : stores[runtime];
  return `createClient needs a store here: the core entry of "oncely" has no default. Pass one, e.g. ${runs}; ${TESTS}.`;
}

/** Creates a client. See {@link ClientOptions}. */
export function createClient(options: ClientOptions): Client {
  return createAnyClient(options, options?.store ? undefined : noStoreMessage());
}
