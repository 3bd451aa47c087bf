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

interface NodeCrypto {
  createHash(algorithm: 'sha256'): { update(text: string): { digest(encoding: 'hex'): string } };
}

let nodeCrypto: NodeCrypto | null | undefined;

/**
 * Node's `crypto` module where the runtime has one (read through `process.getBuiltinModule`,
 * so bundles for browsers import nothing), else null. Its hash is synchronous: Web Crypto's
 * `digest` in Node is a round trip through the thread pool, about 40 µs per call.
 */
function nodeHash(): NodeCrypto | null {
  if (nodeCrypto === undefined) {
    const process = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
    const module = process?.getBuiltinModule?.('node:crypto') as Partial<NodeCrypto> | undefined;
    nodeCrypto = typeof module?.createHash === 'function' ? (module as NodeCrypto) : null;
  }
  return nodeCrypto;
}

/** Hex SHA-256 (UTF-8) of method, URL and body, separated unambiguously. */
export async function fingerprint(method: string, url: string, body: string | undefined): Promise<string> {
  const text = JSON.stringify([method.toUpperCase(), url, body ?? null]);
  const node = nodeHash();
  if (node) return node.createHash('sha256').update(text).digest('hex');
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}
