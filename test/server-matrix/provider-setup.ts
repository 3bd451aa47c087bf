/**
 * What the tests of a `providerCall` app in a child process share (the crash-between-phases
 * matrix and the node-level chain): provider-app.ts bundled for `AppProcess`, the app's
 * orders table, and the contract server as the provider, keeping a ledger of charge keys.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type pg from 'pg';
import { listenContractServer } from '../../node/mock-server.js';
import { type ContractServer, createContractServer } from '../../src/mock/index.js';

/** Bundles provider-app.ts to `script` (pg and express stay external). */
export async function buildProviderApp(script: string): Promise<void> {
  await mkdir(path.dirname(script), { recursive: true });
  await build({
    entryPoints: [fileURLToPath(new URL('./provider-app.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: script,
    external: ['pg', 'express'],
    logLevel: 'warning',
  });
}

/** Creates the orders table and starts the provider: each charge's idempotency key is pushed to `charges`. */
export async function startProvider(
  admin: pg.Pool | pg.Client,
  charges: string[],
): Promise<{ provider: ContractServer; url: string; close: () => Promise<void> }> {
  await admin.query(
    'CREATE TABLE orders (id bigserial PRIMARY KEY, scope text, key text, amount int, state text, charge text)',
  );
  const provider = createContractServer({
    routes: {
      'POST /charges': ({ key }) => {
        charges.push(key!);
        return { status: 201, body: { id: `ch_${charges.length}` } };
      },
    },
  });
  const { url, close } = await listenContractServer(provider);
  return { provider, url, close };
}
