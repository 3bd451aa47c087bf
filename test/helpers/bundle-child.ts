/**
 * A child process's script: its entry bundled by esbuild into one ES module for `node`
 * (what `external` names stays an import: put `outfile` inside the repo, so that it
 * resolves from node_modules); `alias` maps imports to files (`oncely/*` to this tree's sources).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

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
