/**
 * oncely on each runtime as an app runs it (the package's export conditions, its default
 * durable store): a checkout is SIGKILLed while its POST is on the wire, a new process
 * resumes it, and the server sees one key and runs one effect.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempStoreDir } from '../fixtures/store-dirs.js';
import { ensureInstalled, type Runtime, runtimes } from './runtimes.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const checkout = fileURLToPath(new URL('./fixtures/checkout.mjs', import.meta.url));

/** A payments endpoint that charges once per key and holds the first request of each key unanswered. */
let server: Server;
let baseUrl = '';
const requests: string[] = [];
let charges = 0;
let received: () => void = () => {};

beforeAll(async () => {
  if (!existsSync(`${root}dist/node/default.js`)) throw new Error('dist/ is missing: run npm run build first');
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = String(req.headers['idempotency-key']);
      const first = !requests.includes(key);
      requests.push(key);
      if (first) {
        charges++;
        received();
        return; // the process that sent it dies before any answer
      }
      res.writeHead(201, { 'content-type': 'application/json', 'idempotent-replayed': 'true' });
      res.end(JSON.stringify({ id: 'pay_1' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function run(runtime: Runtime, stateDir: string): Run {
  const [bin, ...args] = runtime.command;
  const child = spawn(bin!, [...args, checkout], {
    cwd: root,
    env: { ...process.env, ONCELY_STATE_DIR: stateDir, SMOKE_BASE_URL: baseUrl, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

describe.each(runtimes)('$name', (runtime) => {
  it('a checkout SIGKILLed mid-POST resumes in a new process under the same key: one charge', async () => {
    ensureInstalled(runtime);
    requests.length = 0;
    charges = 0;
    const { dir, remove } = await tempStoreDir();
    try {
      const onWire = new Promise<void>((resolve) => {
        received = resolve;
      });
      const first = run(runtime, dir);
      await Promise.race([
        onWire,
        first.exited.then((code) => {
          throw new Error(`the first process exited (${code}) before its POST: ${first.stderr()}`);
        }),
      ]);
      first.child.kill('SIGKILL');
      await first.exited;
      const key = /^key (.+)$/m.exec(first.stdout())?.[1];
      expect(key, first.stderr()).toBeDefined();

      const second = run(runtime, dir);
      const code = await second.exited;
      expect(code, second.stderr()).toBe(0);
      const lines = second.stdout().trim().split('\n');
      expect(lines[0]).toBe(`key ${key}`);
      expect(JSON.parse(lines.at(-1)!)).toEqual({ status: 201, key, replayed: true, data: { id: 'pay_1' } });
      expect(new Set(requests).size).toBe(1);
      expect(requests).toHaveLength(2);
      expect(charges).toBe(1);
      // Nothing on stderr: no warning an app did not ask for.
      expect(second.stderr()).toBe('');
    } finally {
      await remove();
    }
  });
});
