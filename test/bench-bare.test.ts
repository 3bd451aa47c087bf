/**
 * `npm run bench -- --only=overhead,claims,retry,startup` on a bare machine (only Node, the
 * built package and its runtime dependencies; ../shared/tools/quiet-bench.sh packs that): the
 * modules those sections load, followed through their static imports from bench/run.ts,
 * import nothing else. Playwright, esbuild and pg are loaded by their own sections only.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const runtime = new Set(Object.keys(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).dependencies));

/** Static, value-importing specifiers of a file (`import type` and `import()` left out). */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/^import\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)) found.push(m[1]!);
  return found;
}

/** Bare specifiers reached from `entries` through relative static imports. */
function reached(entries: string[]): Map<string, string> {
  const seen = new Set<string>();
  const bare = new Map<string, string>();
  const queue = entries.map((e) => path.join(root, e));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith('.')) {
        const target = path.resolve(path.dirname(file), spec);
        // The sources import each other as `./x.js`; the bench as `./x.ts`.
        const ts = target.replace(/\.js$/, '.ts');
        queue.push(existsSync(ts) ? ts : target);
      } else bare.set(spec, path.relative(root, file));
    }
  }
  return bare;
}

const allowed = (spec: string) =>
  spec.startsWith('node:') || spec === 'oncely' || spec.startsWith('oncely/') || runtime.has(spec.split('/')[0]!);

describe('the bench on a bare machine', () => {
  it('bench/run.ts and the overhead, claims, retry and startup sections import only Node, oncely and its runtime dependencies', () => {
    const sections = ['http-overhead', 'durable-claims', 'retry-cpu', 'startup', 'disk-claims', 'sqlite-block'];
    const bare = reached(['bench/run.ts', ...sections.map((s) => `bench/${s}.ts`)]);
    const others = [...bare].filter(([spec]) => !allowed(spec)).map(([spec, from]) => `${spec} (${from})`);
    expect(others).toEqual([]);
    // The check sees the imports it must keep out: the sections that need them still import them.
    const heavy = reached(['bench/browser.ts', 'bench/bundle.ts', 'bench/server.ts']);
    expect([...heavy.keys()]).toEqual(expect.arrayContaining(['@playwright/test', 'esbuild', 'pg']));
  });
});
