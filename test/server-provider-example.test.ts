/** Runs examples/postgres-provider-call against a throwaway cluster, from the sources. */
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { bundleChild } from './helpers/bundle-child.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();
const repo = fileURLToPath(new URL('..', import.meta.url));

it('examples/postgres-provider-call: a double send and a lost provider answer, one order and one charge', async () => {
  const out = path.join(repo, '.tmp', `provider-example-${process.pid}.mjs`);
  await bundleChild(path.join(repo, 'examples/postgres-provider-call/main.ts'), out, ['pg', 'express'], {
    oncely: path.join(repo, 'src/index.ts'),
    'oncely/node': path.join(repo, 'node/index.ts'),
    'oncely/mock': path.join(repo, 'src/mock/index.ts'),
    'oncely/postgres': path.join(repo, 'postgres/index.ts'),
    'oncely/server/express': path.join(repo, 'src/server/express.ts'),
    'oncely/server': path.join(repo, 'src/server/index.ts'),
  });
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [out], {
      env: {
        ...process.env,
        PGHOST: db.cluster.host,
        PGPORT: String(db.cluster.port),
        PGUSER: 'postgres',
        PGDATABASE: 'postgres',
      },
      timeout: 90_000,
    });
    expect(stdout).toContain('provider charges 1 orders 1');
    expect(stdout).toContain('one order, one charge');
  } finally {
    await rm(out, { force: true });
  }
}, 120_000);
