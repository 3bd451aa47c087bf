/**
 * Edge and worker runtimes (issue 29 §4): `oncely` and `oncely/postgres` bundle for the
 * `workerd` and `edge-light` export conditions with no Node built-in on their import path,
 * and `createClient` without a store names only stores that can run on the runtime it finds.
 */
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient, detectRuntime, noStoreMessage } from '../src/core-client.js';
import { InvalidArgumentError } from '../src/errors.js';

const root = fileURLToPath(new URL('../', import.meta.url));

describe.each([
  { runtime: 'workerd (Cloudflare Workers, wrangler)', conditions: ['workerd', 'worker', 'browser'] },
  { runtime: 'edge-light (Vercel Edge)', conditions: ['edge-light', 'worker', 'browser'] },
])('a bundle for $runtime', ({ conditions }) => {
  beforeAll(async () => {
    const { existsSync } = await import('node:fs');
    if (!existsSync(`${root}dist/postgres/index.js`)) throw new Error('dist/ is missing: run npm run build first');
  });

  it('bundles oncely and oncely/postgres, with no Node built-in on their import path', async () => {
    const result = await build({
      stdin: {
        contents: `export * from 'oncely'; export { PostgresStore, startWorker, drainOnce } from 'oncely/postgres';`,
        resolveDir: root,
        loader: 'js',
      },
      bundle: true,
      write: false,
      format: 'esm',
      // Neutral: a `node:` import is unresolved (an error), as in a Worker without nodejs_compat.
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((input) => input.startsWith('dist/postgres/'))).toBe(true);
    expect(inputs.some((input) => input.startsWith('dist/node/'))).toBe(false);
    expect(inputs.filter((input) => input.startsWith('node:'))).toEqual([]);
    expect(result.outputFiles[0]!.text).not.toMatch(/from\s*["']node:/);
  });
});

describe('createClient without a store, on the core entry', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });
  const baseUrl = 'https://api.example/';
  const refusal = () => {
    try {
      createClient({ baseUrl });
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidArgumentError);
      return (error as Error).message;
    }
    throw new Error('createClient accepted no store');
  };

  it('on Cloudflare Workers names DurableObjectStore, then PostgresStore under nodejs_compat, never SQLite or IndexedDB', () => {
    vi.stubGlobal('navigator', { userAgent: 'Cloudflare-Workers' });
    expect(detectRuntime()).toBe('workerd');
    const message = refusal();
    expect(message).toMatch(/DurableObjectStore.*oncely\/cloudflare.*PostgresStore.*nodejs_compat/);
    expect(message).not.toMatch(/SQLite|Sqlite|IndexedDB|IdbStore/);
  });

  it('on an edge runtime names no store that cannot run there (SQLite, IndexedDB, plain pg)', () => {
    vi.stubGlobal('EdgeRuntime', 'edge-runtime');
    expect(detectRuntime()).toBe('edge-light');
    const message = refusal();
    expect(message).not.toMatch(/SQLite|Sqlite|IndexedDB|IdbStore/);
    expect(message).toMatch(/`pg` itself needs TCP sockets/);
  });

  it('in Node (a build without the node condition) names SqliteStore and PostgresStore, not IndexedDB', () => {
    expect(detectRuntime()).toBe('node');
    const message = refusal();
    expect(message).toMatch(/SqliteStore.*oncely\/node/);
    expect(message).not.toMatch(/IndexedDB|IdbStore/);
  });

  it('elsewhere names only your own Store, PostgresStore where a driver runs, and MemoryStore for tests', () => {
    expect(noStoreMessage('unknown')).not.toMatch(/SQLite|Sqlite|IndexedDB|IdbStore/);
  });
});
