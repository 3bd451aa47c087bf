/**
 * Runs test/cloudflare/worker.ts in local workerd (npm `workerd`, a devDependency): bundled
 * with esbuild under the `workerd` condition, Durable Object storage on a local disk
 * directory that outlives the process, so a killed workerd restarted over it finds its
 * intents.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = path.join(root, 'node_modules', '.bin', 'workerd');

const config = (port: number) => `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "do-disk", disk = (path = "do", writable = true)),
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "worker.js")],
  compatibilityDate = "2026-11-01",
  durableObjectNamespaces = [(className = "IntentStoreObject", uniqueKey = "oncely-test-intents", enableSql = true)],
  durableObjectStorage = (localDisk = "do-disk"),
  globalOutbound = "internet",
  bindings = [(name = "INTENTS", durableObjectNamespace = "IntentStoreObject")],
);
`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Workerd {
  url: string;
  output: () => string;
  /** Starts workerd (again) over the same storage. */
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  remove(): Promise<void>;
}

/** `entry`: a Worker module of test/cloudflare (default worker.ts, with the INTENTS namespace). */
export async function workerd(entry = 'worker.ts'): Promise<Workerd> {
  if (!existsSync(path.join(root, 'dist', 'cloudflare', 'index.js')))
    throw new Error('dist/ is missing: run npm run build first (the Worker imports oncely as users do)');
  const dir = await mkdtemp(path.join(tmpdir(), 'oncely-workerd-'));
  await mkdir(path.join(dir, 'do'));
  await build({
    entryPoints: [fileURLToPath(new URL(`./${entry}`, import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    // Node built-ins come from workerd (nodejs_compat); `pg` is CommonJS and requires them.
    external: ['cloudflare:*', 'node:*', ...builtinModules],
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire('file:///worker.js');",
    },
    outfile: path.join(dir, 'worker.js'),
    absWorkingDir: root,
    logLevel: 'silent',
  });
  const port = await freePort();
  await writeFile(path.join(dir, 'config.capnp'), config(port));
  let child: ChildProcess | undefined;
  let output = '';
  const url = `http://127.0.0.1:${port}`;
  const handle: Workerd = {
    url,
    output: () => output,
    async start() {
      child = spawn(bin, ['serve', 'config.capnp', '--verbose'], {
        cwd: dir,
        env: { ...process.env, PWD: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const collect = (chunk: string) => {
        output += chunk;
      };
      child.stdout!.setEncoding('utf8').on('data', collect);
      child.stderr!.setEncoding('utf8').on('data', collect);
      for (const until = Date.now() + 20_000; Date.now() < until; ) {
        if (child.exitCode !== null) throw new Error(`workerd exited ${child.exitCode}:\n${output}`);
        try {
          await fetch(`${url}/ready`);
          return;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      throw new Error(`workerd did not listen within 20 s:\n${output}`);
    },
    async kill(signal = 'SIGKILL') {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
    async remove() {
      await handle.kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
  await handle.start();
  return handle;
}
