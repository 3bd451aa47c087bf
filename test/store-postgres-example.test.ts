/** Runs examples/postgres-payout-worker against a throwaway cluster, from the sources. */
import { expect, it } from 'vitest';
import { runExample } from './helpers/run-example.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();

it('examples/postgres-payout-worker: a worker killed mid-request, every payout made exactly once', async () => {
  const stdout = await runExample('postgres-payout-worker', ['pg'], db.cluster);
  expect(stdout).toContain('worker A killed mid-request');
  expect(stdout).toContain('every payout made exactly once');
}, 120_000);
