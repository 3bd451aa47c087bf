/**
 * The world of a server-matrix case: the app (app.ts) in a child process over one store,
 * an HTTP client on 127.0.0.1 that records every answer, and a look into the app's
 * database (ledger rows, key rows) from the test process.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import type pg from 'pg';
import type { AppConfig } from './app.js';

export type StoreKind = 'pg' | 'sqlite';

/** One answer as the client got it (`status` 0: no answer, `error` says why). */
export interface Answer {
  key: string | undefined;
  /** The body sent, for the final retry of the key. */
  sent: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  error?: string;
  /** Whether the answer came before the client finished sending its body. */
  early?: boolean;
}

export interface Post {
  body?: string;
  behave?: string;
  /** Extra headers, or a replacement for the key header (`idempotency-key`: a string or several). */
  headers?: Record<string, string | string[]>;
  /** Send `Content-Length: declared` and only `sent` bytes, then drop the connection. */
  disconnect?: { declared: number; sent: number };
  timeoutMs?: number;
}

export class AppProcess {
  readonly lines: string[] = [];
  stderr = '';
  url = '';
  readonly exited: Promise<number | null>;
  readonly #proc: ChildProcessWithoutNullStreams;
  readonly #waiters: { prefix: string; resolve: (line: string) => void }[] = [];

  constructor(script: string, config: AppConfig) {
    this.#proc = spawn(process.execPath, [script, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let partial = '';
    this.#proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop()!;
      for (const line of parts) {
        this.lines.push(line);
        for (const waiter of this.#waiters.filter((w) => line.startsWith(w.prefix))) {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    });
    this.#proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.#proc.once('exit', (code) => resolve(code)));
  }

  get alive(): boolean {
    return this.#proc.exitCode === null && this.#proc.signalCode === null;
  }

  async started(): Promise<void> {
    this.url = (await this.waitFor('URL ')).slice(4);
  }

  /** The next stdout line starting with `prefix` (one already printed counts once). */
  waitFor(prefix: string, timeoutMs = 15_000): Promise<string> {
    const at = this.lines.findIndex((line) => line.startsWith(prefix));
    if (at >= 0) return Promise.resolve(this.lines.splice(at, 1)[0]!);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "${prefix}" from the app: ${this.stderr}`)), timeoutMs);
      this.#waiters.push({
        prefix,
        resolve: (line) => {
          clearTimeout(timer);
          this.lines.splice(this.lines.indexOf(line), 1);
          resolve(line);
        },
      });
      void this.exited.then(() => reject(new Error(`the app exited before "${prefix}": ${this.stderr}`)));
    });
  }

  async kill(): Promise<void> {
    this.#proc.kill('SIGKILL');
    await this.exited;
  }
}

/** POST /payments over a fresh connection; every answer (or its absence) is returned. */
export function post(url: string, key: string | undefined, options: Post = {}): Promise<Answer> {
  const sent = options.body ?? JSON.stringify({ amount: 5 });
  const headers: Record<string, string | string[]> = { 'content-type': 'application/json' };
  if (key !== undefined) headers['idempotency-key'] = `"${key}"`;
  if (options.behave) headers['x-behave'] = options.behave;
  Object.assign(headers, options.headers);
  return new Promise((resolve) => {
    let finished = false;
    const done = (answer: Omit<Answer, 'key' | 'sent'>) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      resolve({ key, sent, ...answer });
    };
    const nothing = (error: string) => done({ status: 0, headers: {}, body: Buffer.alloc(0), error });
    const timer = setTimeout(() => {
      req.destroy();
      nothing('timeout');
    }, options.timeoutMs ?? 10_000);
    let ended = false;
    const req = httpRequest(`${url}/payments`, { method: 'POST', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      const early = !ended;
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        done({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), early }),
      );
      res.on('error', (error) => nothing(error.message));
    });
    req.on('error', (error) => nothing(error.message));
    if (options.disconnect) {
      req.setHeader('content-length', String(options.disconnect.declared));
      req.write(Buffer.alloc(options.disconnect.sent, 0x20));
      setTimeout(() => {
        req.destroy();
        nothing('disconnected');
      }, 200);
      return;
    }
    ended = true;
    req.end(sent);
  });
}

/**
 * A hand-written request (headers no client library would send) on a fresh socket; `status`
 * 0 when none came. With `chunked`, `text` is the head and that many bytes of a chunked
 * body follow, a body that never ends.
 */
export function raw(url: string, text: string, timeoutMs = 5_000, chunked?: number): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const ended = chunked === undefined;
    const finish = () => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      const head = (split < 0 ? all : all.subarray(0, split)).toString('latin1').split('\r\n');
      const status = Number(head[0]?.split(' ')[1] ?? 0) || 0;
      const headers: Record<string, string> = {};
      for (const line of head.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = split < 0 ? Buffer.alloc(0) : all.subarray(split + 4);
      resolve({ key: undefined, sent: '', status, headers, body, early: !ended });
    };
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      if (chunked !== undefined && complete(Buffer.concat(chunks))) socket.destroy();
    });
    socket.on('close', finish);
    socket.on('error', () => undefined);
    socket.write(text);
    if (chunked === undefined) return;
    // `chunked` bytes, then nothing more: the body never ends, so only a server that stops
    // reading at its limit can answer (one that reads to the end waits until the timeout).
    let out = 0;
    const piece = Buffer.concat([Buffer.from('4000\r\n'), Buffer.alloc(0x4000, 0x20), Buffer.from('\r\n')]);
    const pump = () => {
      while (out < chunked && !socket.destroyed) {
        out += 0x4000;
        if (!socket.write(piece)) return void socket.once('drain', pump);
      }
    };
    pump();
  });
}

/** Whether `bytes` hold a whole answer (its head and Content-Length bytes of body). */
function complete(bytes: Buffer): boolean {
  const split = bytes.indexOf('\r\n\r\n');
  if (split < 0) return false;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(bytes.subarray(0, split).toString('latin1'));
  return length !== null && bytes.length - split - 4 >= Number(length[1]);
}

/** What the invariants read of the app's database. */
export interface Database {
  /** Ledger rows of `key` (its effects) inside retention. */
  effects(key: string): Promise<number>;
  /** Committed key rows of `key` inside retention. */
  keyRows(key: string): Promise<number>;
  /** The committed answer's body of `key`, if any. */
  committedBody(key: string): Promise<Buffer | undefined>;
  /** Moves the key's row and its ledger rows 25 h back: past retention. */
  age(key: string): Promise<void>;
  /** `pg_terminate_backend(pid)` (PostgreSQL only). */
  terminate(pid: number): Promise<void>;
}

export function postgresDatabase(admin: pg.Pool): Database {
  const n = async (sql: string, key: string) => Number((await admin.query(sql, [key])).rows[0].n);
  return {
    effects: (key) =>
      n(`SELECT count(*) AS n FROM ledger WHERE key = $1 AND created_at > now() - interval '24 hours'`, key),
    keyRows: (key) =>
      n(
        `SELECT count(*) AS n FROM oncely_server_keys WHERE key = $1 AND created_at > now() - interval '24 hours'`,
        key,
      ),
    committedBody: async (key) => {
      const { rows } = await admin.query(
        `SELECT body FROM oncely_server_keys WHERE key = $1 AND created_at > now() - interval '24 hours'`,
        [key],
      );
      return rows[0] ? Buffer.from(rows[0].body) : undefined;
    },
    age: async (key) => {
      await admin.query(`DO $$ DECLARE d date := ((now() - interval '25 hours') AT TIME ZONE 'UTC')::date; BEGIN
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF oncely_server_keys FOR VALUES FROM (%L) TO (%L)',
          'oncely_server_keys_' || to_char(d, 'YYYYMMDD'), d, d + 1); END $$`);
      await admin.query(
        `UPDATE oncely_server_keys SET created_at = now() - interval '25 hours',
                day = ((now() - interval '25 hours') AT TIME ZONE 'UTC')::date WHERE key = $1`,
        [key],
      );
      await admin.query(`UPDATE ledger SET created_at = now() - interval '25 hours' WHERE key = $1`, [key]);
    },
    terminate: async (pid) => {
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    },
  };
}

export function sqliteDatabase(file: string): Database {
  const open = () => {
    const db = new DatabaseSync(file);
    db.exec('PRAGMA busy_timeout = 5000');
    return db;
  };
  const since = () => Date.now() - 86_400_000;
  const n = (sql: string, key: string) => {
    const db = open();
    try {
      return Number((db.prepare(sql).get(key, since()) as { n: number }).n);
    } finally {
      db.close();
    }
  };
  return {
    effects: async (key) => n('SELECT count(*) AS n FROM ledger WHERE key = ? AND created_at > ?', key),
    keyRows: async (key) =>
      n('SELECT count(*) AS n FROM oncely_server_keys WHERE key = ? AND created_at > ? AND status IS NOT NULL', key),
    committedBody: async (key) => {
      const db = open();
      try {
        const row = db
          .prepare('SELECT body FROM oncely_server_keys WHERE key = ? AND created_at > ?')
          .get(key, since()) as { body: Uint8Array } | undefined;
        return row ? Buffer.from(row.body) : undefined;
      } finally {
        db.close();
      }
    },
    age: async (key) => {
      const db = open();
      try {
        const back = 25 * 3_600_000;
        db.prepare('UPDATE oncely_server_keys SET created_at = created_at - ? WHERE key = ?').run(back, key);
        db.prepare('UPDATE ledger SET created_at = created_at - ? WHERE key = ?').run(back, key);
      } finally {
        db.close();
      }
    },
    terminate: async () => {
      throw new Error('pg_terminate_backend: PostgreSQL only');
    },
  };
}
