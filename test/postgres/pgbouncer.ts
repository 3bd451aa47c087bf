/**
 * A throwaway PgBouncer in front of a test cluster: its own config in a temp dir, listening
 * on a unix socket there only (no TCP), `pool_mode = transaction` unless told otherwise,
 * trust auth; run as `postgres` when the tests run as root (PgBouncer refuses root), stopped
 * by `stop()`. Debian's `pgbouncer` (scripts/install-pgbouncer.sh).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Cluster } from './cluster.js';

const exec = promisify(execFile);

export const PGBOUNCER = process.env.ONCELY_PGBOUNCER ?? '/usr/sbin/pgbouncer';

export interface Bouncer {
  /** The socket directory: pass it as `host` to `pg`. */
  host: string;
  port: number;
  /** PgBouncer's log (for a failing test's message). */
  log(): Promise<string>;
  stop(): Promise<void>;
}

export interface BouncerOptions {
  poolMode?: 'session' | 'transaction' | 'statement';
  /** Server connections per database/user pair. */
  poolSize?: number;
}

export async function startPgBouncer(cluster: Cluster, options: BouncerOptions = {}): Promise<Bouncer> {
  if (!existsSync(PGBOUNCER))
    throw new Error(
      `PgBouncer not found at ${PGBOUNCER}. Install Debian's pgbouncer: \`sh scripts/install-pgbouncer.sh\` (or set ONCELY_PGBOUNCER). The test does not skip.`,
    );
  const dir = await mkdtemp(path.join(os.tmpdir(), 'oncely-pgbouncer-'));
  const root = process.getuid?.() === 0;
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const ini = path.join(dir, 'pgbouncer.ini');
  const pidfile = path.join(dir, 'pgbouncer.pid');
  const logfile = path.join(dir, 'pgbouncer.log');
  await writeFile(path.join(dir, 'users.txt'), `"${cluster.user}" ""\n`);
  await writeFile(
    ini,
    [
      '[databases]',
      `${cluster.database} = host=${cluster.host} port=${cluster.port} dbname=${cluster.database} user=${cluster.user}`,
      '[pgbouncer]',
      'listen_addr =',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 4}`,
      'max_client_conn = 500',
      `logfile = ${logfile}`,
      `pidfile = ${pidfile}`,
      // pg sends no startup options by default; these are what drivers commonly send.
      'ignore_startup_parameters = extra_float_digits,options',
      '',
    ].join('\n'),
  );
  if (root) {
    const [u, g] = await Promise.all([exec('id', ['-u', 'postgres']), exec('id', ['-g', 'postgres'])]);
    const uid = Number(u.stdout.trim());
    const gid = Number(g.stdout.trim());
    for (const file of [dir, ini, path.join(dir, 'users.txt')]) await chown(file, uid, gid);
  }
  // -d: a daemon, which writes its pid file and opens its socket shortly after the command returns.
  await (root ? exec('runuser', ['-u', 'postgres', '--', PGBOUNCER, '-d', ini]) : exec(PGBOUNCER, ['-d', ini]));
  const socket = path.join(dir, `.s.PGSQL.${port}`);
  for (let i = 0; i < 400 && !(existsSync(pidfile) && existsSync(socket)); i++)
    await new Promise((resolve) => setTimeout(resolve, 25));
  const pid = Number((await readFile(pidfile, 'utf8').catch(() => '')).trim());
  if (!(pid > 0 && existsSync(socket)))
    throw new Error(`PgBouncer did not start: ${await readFile(logfile, 'utf8').catch(() => '(no log)')}`);
  let stopped = false;
  return {
    host: dir,
    port,
    log: () => readFile(logfile, 'utf8').catch(() => ''),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      try {
        process.kill(pid, 'SIGTERM'); // immediate shutdown (SIGINT would wait for the clients)
      } catch {}
      for (let i = 0; i < 200; i++) {
        try {
          process.kill(pid, 0);
        } catch {
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
