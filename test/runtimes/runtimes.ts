/**
 * The runtimes the smoke test runs oncely on: the tooling's Node, and those that
 * scripts/install-runtimes.sh puts in .cache/runtimes (npm test installs them first).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface Runtime {
  name: string;
  /** The command line that runs a module file (the file is appended). */
  command: string[];
}

const cache = (path: string) => fileURLToPath(new URL(`../../.cache/runtimes/${path}`, import.meta.url));

export const runtimes: Runtime[] = [
  { name: `Node ${process.versions.node}`, command: [process.execPath] },
  { name: 'Node 22.13', command: [cache('node-22.13/node_modules/node/bin/node')] },
  { name: 'Bun 1.4', command: [cache('bun-1.4/node_modules/.bin/bun')] },
  { name: 'Deno 2.9', command: [cache('deno-2.9/node_modules/.bin/deno'), 'run', '-A'] },
];

/** Fails with the command that installs a runtime, rather than skipping it. */
export function ensureInstalled(runtime: Runtime): void {
  const bin = runtime.command[0]!;
  if (!existsSync(bin))
    throw new Error(`${runtime.name} is not installed (${bin}): run sh scripts/install-runtimes.sh`);
}
