/** Spawns and tracks child processes that print lines, killed after each test. */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { type LineChild, LineChildren } from '../helpers/line-child.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// Inside the repo, so that the external `pg` resolves from node_modules.
const script = path.join(repo, '.tmp', `pg-child-${process.pid}.mjs`);
beforeAll(async () => {
  await mkdir(path.dirname(script), { recursive: true });
  await build({
    entryPoints: [fileURLToPath(new URL('./child.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: script,
    external: ['pg'],
    logLevel: 'warning',
  });
});
afterAll(() => rm(script, { force: true }));

export type Child = LineChild;

const children = new LineChildren();
afterEach(() => children.killAll());

export const startChild = (args: string[]): Child => children.start(script, args);
