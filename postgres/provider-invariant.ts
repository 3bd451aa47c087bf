/**
 * Seed 000's daily invariant for handlers that call a provider (`providerCall`): the
 * provider's charges (the app lists them: each charge's idempotency key, from the
 * provider's API or export) against the distinct incoming keys of the operation. Every
 * charge must carry the downstream key of exactly one incoming key, and no key two charges.
 */
import { InvalidArgumentError, StoreError } from '../src/errors.js';
import type { Queryable } from './database.js';
import { downstreamIntent } from './provider-call.js';

export interface ProviderInvariantOptions {
  /** The scope of the oncely client that calls the provider (`client.scope`): the downstream keys derive from it. */
  clientScope: string;
  /** The operation the incoming keys were bound to, e.g. `POST /orders`. */
  operation: string;
  /**
   * The provider's charges: the idempotency key each was made under, over a window that
   * lies inside `window` (a charge older than the keys read would count as unmatched).
   */
  charges: Iterable<string>;
  /** Keys read: completed ones and calls between phases, newer than this PostgreSQL interval. @default '23 hours' */
  window?: string;
}

export interface ProviderInvariantReport {
  operation: string;
  /** Distinct incoming keys of the operation: completed in the window, or between phases. */
  keys: number;
  charges: number;
  /** Charges beyond the first under one downstream key (the provider did not deduplicate). */
  duplicates: number;
  /** Charges whose key no incoming key derives (made outside `providerCall`, or under a fresh key). */
  unmatched: number;
  /** Keys answered 2xx with no charge listed (a listing that lags, or an answer without its charge). */
  uncharged: number;
  /** `duplicates + unmatched`: above 0, a charge that is not one key's one charge. */
  drift: number;
}

/** Reads the keys in one snapshot and compares them with the provider's listing. Schedule it; page on `drift !== 0`. */
export async function checkProviderInvariant(
  db: Queryable,
  options: ProviderInvariantOptions,
): Promise<ProviderInvariantReport> {
  if (typeof options?.clientScope !== 'string' || typeof options.operation !== 'string' || !options.charges)
    throw new InvalidArgumentError('checkProviderInvariant needs a `clientScope`, an `operation` and `charges`.');
  let rows: { scope: string; key: string; status: number | null }[];
  try {
    // One statement: one snapshot of both tables (a key moves from calls to keys in one transaction).
    const result = await db.query({
      text: `SELECT scope, key, status FROM oncely_server_keys
              WHERE operation = $1 AND created_at > now() - $2::interval
             UNION ALL
             SELECT scope, key, NULL FROM oncely_server_calls WHERE operation = $1`,
      values: [options.operation, options.window ?? '23 hours'],
    });
    rows = result.rows;
  } catch (error) {
    throw new StoreError(`checkProviderInvariant could not read the keys: ${(error as Error)?.message ?? error}.`, {
      cause: error,
    });
  }
  const expected = new Map<string, boolean>(); // downstream key → answered 2xx
  for (const row of rows) {
    const { key } = downstreamIntent(options.clientScope, row.scope, options.operation, row.key);
    expected.set(key, (expected.get(key) ?? false) || (row.status !== null && row.status >= 200 && row.status < 300));
  }
  const seen = new Map<string, number>();
  let charges = 0;
  for (const key of options.charges) {
    charges++;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  let duplicates = 0;
  let unmatched = 0;
  for (const [key, n] of seen) {
    if (!expected.has(key)) unmatched += n;
    else duplicates += n - 1;
  }
  let uncharged = 0;
  for (const [key, ok] of expected) if (ok && !seen.has(key)) uncharged++;
  const keys = new Set(rows.map((row) => JSON.stringify([row.scope, row.key]))).size;
  return {
    operation: options.operation,
    keys,
    charges,
    duplicates,
    unmatched,
    uncharged,
    drift: duplicates + unmatched,
  };
}
