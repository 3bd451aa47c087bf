/**
 * What the tests of a `providerCall` app in a child process share (the crash-between-phases
 * matrix and the node-level chain): provider-app.ts bundled for `AppProcess`, the app's
 * orders table, and the contract server as the provider, keeping a ledger of charge keys.
 */
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { listenContractServer } from '../../node/mock-server.js';
import { type ContractServer, createContractServer } from '../../src/mock/index.js';
import { bundleChild } from '../helpers/bundle-child.js';

/** Bundles provider-app.ts to `script` (pg and express stay external). */
export const buildProviderApp = (script: string): Promise<void> =>
  bundleChild(fileURLToPath(new URL('./provider-app.ts', import.meta.url)), script, ['pg', 'express']);

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
