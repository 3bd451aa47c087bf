/**
 * A throwaway Debian `redis-server` for one test file (on a unix socket in a temp dir, no
 * persistence), and the few commands express-idempotency's Redis adapter sends, over RESP
 * on one connection with pipelining, as `@redis/client` does.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../servers/listen.js';

export const REDIS_SERVER = process.env.ONCELY_REDIS_SERVER ?? '/usr/bin/redis-server';

export interface RedisServer {
  socket: string;
  stop(): Promise<void>;
}

export async function startRedisServer(): Promise<RedisServer> {
  if (!existsSync(REDIS_SERVER))
    throw new Error(`${REDIS_SERVER} is missing: run \`sh scripts/install-redis.sh\` (Debian's redis-server).`);
  const dir = mkdtempSync(join(tmpdir(), 'oncely-redis-'));
  const socket = join(dir, 'redis.sock');
  const args = ['--port', '0', '--unixsocket', socket, '--save', '', '--appendonly', 'no', '--dir', dir];
  const child: ChildProcess = spawn(REDIS_SERVER, args, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (let i = 0; !existsSync(socket); i++) {
    if (i >= 200 || child.exitCode !== null) throw new Error('redis-server did not start within 2 s');
    await sleep(10);
  }
  return {
    socket,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

type Reply = string | number | null;

/** One connection; replies come back in command order, so a FIFO of waiters is enough. */
export class RespClient {
  readonly #socket: Socket;
  readonly #waiting: { resolve(reply: Reply): void; reject(error: Error): void }[] = [];
  #buffer = '';

  constructor(path: string) {
    this.#socket = connect(path);
    this.#socket.setEncoding('utf8');
    this.#socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      for (let parsed = this.#parse(); parsed; parsed = this.#parse()) {
        const waiter = this.#waiting.shift()!;
        if (parsed.error) waiter.reject(new Error(parsed.error));
        else waiter.resolve(parsed.reply);
      }
    });
    this.#socket.on('error', (error) => {
      for (const waiter of this.#waiting.splice(0)) waiter.reject(error);
    });
  }

  command(...args: string[]): Promise<Reply> {
    const frame = `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.#socket.write(frame);
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.end(resolve));
  }

  /** One complete reply off the buffer (simple, error, integer, bulk), or undefined. */
  #parse(): { reply: Reply; error?: string } | undefined {
    const end = this.#buffer.indexOf('\r\n');
    if (end < 0) return undefined;
    const type = this.#buffer[0];
    const line = this.#buffer.slice(1, end);
    if (type === '$') {
      const length = Number(line);
      if (length < 0) return this.#take(end + 2, { reply: null });
      const bytes = Buffer.from(this.#buffer.slice(end + 2), 'utf8');
      if (bytes.length < length + 2) return undefined;
      const value = bytes.subarray(0, length).toString('utf8');
      return this.#take(end + 2 + value.length + 2, { reply: value });
    }
    if (type === '-') return this.#take(end + 2, { reply: null, error: line });
    return this.#take(end + 2, { reply: type === ':' ? Number(line) : line });
  }

  #take<T>(length: number, value: T): T {
    this.#buffer = this.#buffer.slice(length);
    return value;
  }
}
