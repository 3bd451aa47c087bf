/**
 * `intent.post<Payment>(path)`, a ky habit, is refused by the type checker with a message
 * that says what to do (issue 29 §6): oncely types `res.data` only from the `schema` it
 * validates, never from a bare type argument. Checked by running tsc on such a file.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../', import.meta.url));
const dir = `${root}.tmp/post-generic-${process.pid}`;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function typecheck(source: string): { code: number | null; output: string } {
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/app.mts`, source);
  const tsc = `${root}node_modules/typescript/bin/tsc`;
  const flags = [
    '--ignoreConfig',
    '--noEmit',
    '--strict',
    '--skipLibCheck',
    '--target',
    'es2023',
    '--module',
    'nodenext',
  ];
  const run = spawnSync(process.execPath, [tsc, ...flags, '--types', 'node', '--lib', 'es2023,dom', `${dir}/app.mts`], {
    encoding: 'utf8',
  });
  return { code: run.status, output: run.stdout + run.stderr };
}

const header = `import * as z from 'zod/mini';
import { createClient, MemoryStore } from '../../src/index.js';
interface Payment { id: string }
const api = createClient({ baseUrl: 'https://api.test/', store: new MemoryStore() });
const intent = await api.intent('checkout:1');
`;

it('post<T>() without schema fails with "pass `schema`"; post() with schema types res.data', () => {
  const wrong = typecheck(`${header}const res = await intent.post<Payment>('payments', { json: {} });\n`);
  expect(wrong.code).not.toBe(0);
  expect(wrong.output).toMatch(/pass `schema`, not a type argument/);

  const right = typecheck(
    `${header}const res = await intent.post('payments', { json: {}, schema: z.object({ id: z.string() }) });
const id: string = res.data.id;
const plain = await intent.put('payments/1', { json: {} });
const data: unknown = plain.data;
export { id, data };
`,
  );
  expect(right.output).toBe('');
  expect(right.code).toBe(0);
}, 60_000);
