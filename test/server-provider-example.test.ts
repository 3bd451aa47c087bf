/** Runs examples/postgres-provider-call against a throwaway cluster, from the sources. */
import { expect, it } from 'vitest';
import { runExample } from './helpers/run-example.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();

it('examples/postgres-provider-call: a double send and a lost provider answer, one order and one charge', async () => {
  const stdout = await runExample('postgres-provider-call', ['pg', 'express'], db.cluster);
  expect(stdout).toContain('provider charges 1 orders 1');
  expect(stdout).toContain('one order, one charge');
}, 120_000);
