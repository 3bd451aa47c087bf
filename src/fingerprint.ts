/**
 * The request fingerprint: SHA-256 over method, URL and the canonical body. Stored when
 * an intent is first sent, so a changed request under the same intent is caught locally.
 */

/** JSON with object keys sorted at every depth, so `{a,b}` and `{b,a}` hash alike. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/** Hex SHA-256 (Web Crypto) of method, URL and body, separated unambiguously. */
export async function fingerprint(method: string, url: string, body: string | undefined): Promise<string> {
  const text = JSON.stringify([method.toUpperCase(), url, body ?? null]);
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}
