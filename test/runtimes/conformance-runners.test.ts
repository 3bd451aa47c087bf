/**
 * `oncely/testing` as store authors run it, from dist/ through the package's exports: one call
 * in node:test, bun test and Deno.test, each in its runtime's own runner; and the Deno KV
 * store of examples/deno-kv-store through it. A failure in the store fails the author's run.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureInstalled, runtimes } from './runtimes.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixture = (name: string) => `./test/runtimes/fixtures/${name}`;
const runtime = (prefix: string) => {
  const found = runtimes.find((r) => r.name.startsWith(prefix))!;
  ensureInstalled(found);
  return found.command[0]!;
};

function run(bin: string, args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(bin, args, {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, NO_COLOR: '1', ...env },
  });
  return { code: result.status, output: `${result.stdout}\n${result.stderr}` };
}

beforeAll(() => {
  if (!existsSync(`${root}dist/src/testing/index.js`)) throw new Error('dist/ is missing: run npm run build first');
});

describe('the store conformance suite in the author’s own runner', () => {
  it('node:test: 26 pass and the 3 that need reopen are skipped for a MemoryStore', () => {
    const { code, output } = run(process.execPath, ['--test', fixture('conformance-node-test.mjs')]);
    expect(output).toMatch(/ℹ pass 26\b/);
    expect(output).toMatch(/ℹ skipped 3\b/);
    expect(output).toMatch(/ℹ fail 0\b/);
    expect(code).toBe(0);
  });

  it('node:test: a store whose delete ignores the key fails the run, naming the tests it breaks', () => {
    const { code, output } = run(process.execPath, ['--test', fixture('conformance-node-test.mjs')], {
      CONFORMANCE_BROKEN: '1',
    });
    expect(code).toBe(1);
    expect(output).toMatch(/ℹ fail 2\b/);
    expect(output).toContain('with a key removes the intent only if it still has that key');
    expect(output).toMatch(/ConformanceError: delete\(\) with its key|the key after delete\(\) with another key/);
  });

  it('bun test: every test of the suite runs (29)', () => {
    const { code, output } = run(runtime('Bun'), ['test', fixture('conformance-bun.test.mjs')]);
    expect(output).toMatch(/\b29 pass\b/);
    expect(output).toMatch(/\b0 fail\b/);
    expect(code).toBe(0);
  });

  it('Deno.test: the Deno KV store of examples/deno-kv-store passes every test, reopen and lone surrogates included', () => {
    const deno = runtime('Deno');
    const { code, output } = run(deno, [
      'test',
      '--unstable-kv',
      '--no-check',
      '-A',
      'examples/deno-kv-store/conformance.test.ts',
    ]);
    expect(output).toMatch(/ok \| 30 passed \| 0 failed/);
    expect(output).toContain('reopen › two stores over the same data agree on one key ... ok');
    expect(code).toBe(0);
  });
});
