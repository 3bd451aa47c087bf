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

/** Why `createClient` has no store here, and the stores that run here. */
export function noStoreMessage(runtime = detectRuntime()): string {
  const start = 'createClient needs a store here: the core entry of "oncely" has no default store';
  switch (runtime) {
    case 'workerd':
      return `${start} on Cloudflare Workers. Pass one that outlives the request: \`new PostgresStore({ pool })\` from "oncely/postgres" with \`pg\` under the \`nodejs_compat\` flag, or your own \`Store\`; ${TESTS}.`;
    case 'edge-light':
      return `${start} on an edge runtime. Pass one that outlives the request: \`new PostgresStore({ pool })\` from "oncely/postgres" with a \`pg\`-compatible pool that runs here (\`pg\` itself needs TCP sockets), or your own \`Store\`; ${TESTS}.`;
    case 'node':
    case 'bun':
    case 'deno':
      return `${start} (this build resolved it without the "node" export condition). Pass \`new SqliteStore()\` from "oncely/node" (one machine) or \`new PostgresStore({ pool })\` from "oncely/postgres" (a fleet); ${TESTS}.`;
    case 'browser':
      return `${start} (this build resolved it without the "browser" export condition). Pass \`new IdbStore()\` from "oncely/browser"; ${TESTS}.`;
    default:
      return `${start} on this runtime. Pass one that outlives the process: your own \`Store\`, or \`new PostgresStore({ pool })\` from "oncely/postgres" where a PostgreSQL driver runs; ${TESTS}.`;
  }
}

/** Creates a client. See {@link ClientOptions}. */
export function createClient(options: ClientOptions): Client {
  return createAnyClient(options, options?.store ? undefined : noStoreMessage());
}
