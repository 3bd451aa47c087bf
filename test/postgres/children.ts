/** Spawns and tracks child processes that print lines, killed after each test. */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { bundleChild } from '../helpers/bundle-child.js';
import { type LineChild, LineChildren } from '../helpers/line-child.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// Inside the repo, so that the external `pg` resolves from node_modules.
const script = path.join(repo, '.tmp', `pg-child-${process.pid}.mjs`);
beforeAll(() => bundleChild(fileURLToPath(new URL('./child.ts', import.meta.url)), script, ['pg']));
afterAll(() => rm(script, { force: true }));

export type Child = LineChild;

const children = new LineChildren();
afterEach(() => children.killAll());

export const startChild = (args: string[]): Child => children.start(script, args);
