/**
 * An example (examples/<name>/main.ts) run from this tree's sources against a throwaway
 * PostgreSQL cluster, as the example tests do: bundled (`oncely/*` mapped to the sources),
 * run with the cluster in the PG* variables; its stdout.
 */
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Cluster } from '../postgres/cluster.js';
import { bundleChild, SOURCES } from './bundle-child.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));

export async function runExample(name: string, external: string[], cluster: Cluster): Promise<string> {
  const out = path.join(repo, '.tmp', `example-${name}-${process.pid}.mjs`);
  await bundleChild(path.join(repo, 'examples', name, 'main.ts'), out, external, SOURCES);
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [out], {
      env: {
        ...process.env,
        PGHOST: cluster.host,
        PGPORT: String(cluster.port),
        PGUSER: 'postgres',
        PGDATABASE: 'postgres',
      },
      timeout: 90_000,
    });
    return stdout;
  } finally {
    await rm(out, { force: true });
  }
}
