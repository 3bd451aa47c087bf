/**
 * A throwaway PostgreSQL cluster for tests and the bench: `initdb` in a temp dir owned by
 * the `postgres` user, `pg_ctl start` on a unix socket in that dir (no TCP), stopped and
 * removed by `stop()`. Fails with a clear message when the binaries are missing.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** Where Debian's `postgresql` package puts the server binaries. */
export const PG_BIN = process.env.ONCELY_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface Cluster {
  /** The socket directory: pass it as `host` to `pg`. */
  host: string;
  port: number;
  user: 'postgres';
  database: 'postgres';
  /** `pg_ctl restart` in the given mode (`immediate` is a crash: no shutdown checkpoint). */
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
}

function missing(): Error {
  return new Error(
    `PostgreSQL server binaries not found in ${PG_BIN} (initdb, pg_ctl). Install Debian's PostgreSQL: ` +
      '`apt-get update && apt-get install -y postgresql` (or set ONCELY_PG_BIN). The PostgreSQL tests do not skip.',
  );
}

async function uid(user: string): Promise<{ uid: number; gid: number }> {
  const [u, g] = await Promise.all([exec('id', ['-u', user]), exec('id', ['-g', user])]);
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** Runs a server binary as `postgres` (PostgreSQL refuses to run as root). */
function asPostgres(bin: string, args: string[]) {
  const file = path.join(PG_BIN, bin);
  if (process.getuid?.() === 0) return exec('runuser', ['-u', 'postgres', '--', file, ...args]);
  return exec(file, args);
}

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  if (!existsSync(path.join(PG_BIN, 'initdb')) || !existsSync(path.join(PG_BIN, 'pg_ctl'))) throw missing();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'oncely-pg-'));
  const data = path.join(dir, 'data');
  if (process.getuid?.() === 0) {
    const owner = await uid('postgres');
    await chown(dir, owner.uid, owner.gid);
  }
  await asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-instructions']);
  // A port per cluster even on a socket: the socket file is named after it.
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const settings = { listen_addresses: "''", unix_socket_directories: `'${dir}'`, port, ...options.settings };
  const opts = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  const ctl = (args: string[]) =>
    asPostgres('pg_ctl', ['-D', data, '-w', '-t', '60', '-l', path.join(dir, 'log'), ...args]);
  await ctl(['-o', opts, 'start']);
  let stopped = false;
  return {
    host: dir,
    port,
    user: 'postgres',
    database: 'postgres',
    restart: async (mode = 'fast') => {
      await ctl(['-m', mode, '-o', opts, 'restart']);
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await ctl(['-m', 'immediate', 'stop']).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
