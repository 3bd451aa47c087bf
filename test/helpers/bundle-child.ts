/**
 * A child process's script: its entry bundled by esbuild into one ES module for `node`
 * (what `external` names stays an import: put `outfile` inside the repo, so that it
 * resolves from node_modules); `alias` maps imports to files (`SOURCES`).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const repo = fileURLToPath(new URL('../..', import.meta.url));

/** `oncely/*` imports mapped to this tree's sources (for `alias`): what runs is the sources, not dist. */
export const SOURCES: Record<string, string> = Object.fromEntries(
  Object.entries({
    oncely: 'src/index.ts',
    'oncely/node': 'node/index.ts',
    'oncely/mock': 'src/mock/index.ts',
    'oncely/postgres': 'postgres/index.ts',
    'oncely/server/express': 'src/server/express.ts',
    'oncely/server': 'src/server/index.ts',
  }).map(([specifier, file]) => [specifier, path.join(repo, file)]),
);

export async function bundleChild(
  entry: string,
  outfile: string,
  external: string[] = [],
  alias?: Record<string, string>,
): Promise<void> {
  await mkdir(path.dirname(outfile), { recursive: true });
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile,
    external,
    alias,
    logLevel: 'warning',
  });
}
