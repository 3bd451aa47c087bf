/**
 * The exports map, read as Node and bundlers read it: the first condition of an entry that
 * the runtime has wins. `scripts/pack-check.js` checks the same against the installed
 * tarball with `node --conditions=…`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';

type Target = string | { [condition: string]: Target };
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  exports: Record<string, Target>;
  engines: { node: string };
};

/** Node's PACKAGE_TARGET_RESOLVE for condition objects: keys in order, the first one `conditions` has. */
function resolveTarget(target: Target, conditions: readonly string[]): string | undefined {
  if (typeof target === 'string') return target;
  for (const [condition, next] of Object.entries(target)) {
    if (condition === 'default' || conditions.includes(condition)) {
      const found = resolveTarget(next, conditions);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

const root = (conditions: readonly string[]) => resolveTarget(pkg.exports['.']!, conditions);

describe('exports', () => {
  // What each runtime's resolver sets (Node adds `--conditions` to its own; Wrangler and
  // Vercel's edge builds add the browser condition after their own).
  test.each([
    ['workerd (Cloudflare)', ['workerd', 'worker', 'browser', 'import']],
    ['edge-light (Vercel Edge)', ['edge-light', 'worker', 'browser', 'import']],
    ['worker', ['worker', 'browser', 'import']],
    ['node --conditions=workerd', ['workerd', 'node', 'import']],
  ])('%s gets the core entry, whose createClient asks for a store', (_runtime, conditions) => {
    expect(root(conditions)).toBe('./dist/src/index.js');
  });

  test('Node gets the file store default, browsers the IndexedDB one, types the core declarations', () => {
    expect(root(['node', 'import'])).toBe('./dist/node/default.js');
    expect(root(['browser', 'import'])).toBe('./dist/browser/default.js');
    expect(root(['types', 'node', 'import'])).toBe('./dist/src/index.d.ts');
  });

  test('the mock needs no peer: MSW handlers have their own entry', () => {
    expect(resolveTarget(pkg.exports['./mock']!, ['import'])).toBe('./dist/src/mock/index.js');
    expect(resolveTarget(pkg.exports['./mock/msw']!, ['import'])).toBe('./dist/src/mock/msw.js');
  });

  test('the server half and its Express and Fastify adapters have their own entries', () => {
    expect(resolveTarget(pkg.exports['./server']!, ['import'])).toBe('./dist/src/server/index.js');
    expect(resolveTarget(pkg.exports['./server']!, ['types', 'import'])).toBe('./dist/src/server/index.d.ts');
    expect(resolveTarget(pkg.exports['./server/express']!, ['import'])).toBe('./dist/src/server/express.js');
    expect(resolveTarget(pkg.exports['./server/fastify']!, ['import'])).toBe('./dist/src/server/fastify.js');
  });

  test('the store conformance suite has its own entry, with no runner to import', () => {
    expect(resolveTarget(pkg.exports['./testing']!, ['import'])).toBe('./dist/src/testing/index.js');
    expect(resolveTarget(pkg.exports['./testing']!, ['types', 'import'])).toBe('./dist/src/testing/index.d.ts');
    const dir = new URL('../src/testing/', import.meta.url);
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.ts')))
      expect(readFileSync(new URL(file, dir), 'utf8'), file).not.toMatch(
        /^import [^;]* from '(vitest|node:[^']*|bun:test)'/m,
      );
  });

  test('the Cloudflare store has its own entry, and imports no cloudflare: module (it loads anywhere)', () => {
    expect(resolveTarget(pkg.exports['./cloudflare']!, ['workerd', 'import'])).toBe('./dist/cloudflare/index.js');
    expect(resolveTarget(pkg.exports['./cloudflare']!, ['types', 'import'])).toBe('./dist/cloudflare/index.d.ts');
    const dir = new URL('../cloudflare/', import.meta.url);
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.ts')))
      expect(readFileSync(new URL(file, dir), 'utf8'), file).not.toMatch(/from '(cloudflare:[^']*|node:[^']*|pg)'/);
  });

  test('every entry lists types first', () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target !== 'string') expect(Object.keys(target)[0], subpath).toBe('types');
    }
  });

  test('engines states the node:sqlite minimum', () => {
    expect(pkg.engines.node).toBe('>=22.13');
  });
});

describe('oncely/mock imports no peer', () => {
  test('of the modules under src/mock, only msw.ts imports msw, and none imports msw.ts', () => {
    const dir = new URL('../src/mock/', import.meta.url);
    const sources = readdirSync(dir).filter((file) => file.endsWith('.ts'));
    const importers = (pattern: RegExp) =>
      sources.filter((file) => pattern.test(readFileSync(new URL(file, dir), 'utf8')));
    expect(importers(/from 'msw(\/[^']*)?'/)).toEqual(['msw.ts']);
    expect(importers(/from '\.\/msw\.js'/)).toEqual([]);
  });
});

describe('oncely/server imports no database driver and no framework', () => {
  test('no module under src/server imports pg, express or fastify', () => {
    const dir = new URL('../src/server/', import.meta.url);
    const sources = readdirSync(dir).filter((file) => file.endsWith('.ts'));
    expect(sources.length).toBeGreaterThan(0);
    for (const file of sources)
      expect(readFileSync(new URL(file, dir), 'utf8'), file).not.toMatch(/from '(pg|express|fastify)(\/[^']*)?'/);
  });
});
