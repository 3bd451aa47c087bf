/**
 * The server fault matrix (issue 27 §4): every case of cases.ts × PostgresKeyStore and
 * SqliteKeyStore, behind the Express adapter in a child process on 127.0.0.1. `npm test`
 * runs the cases marked fast; `ONCELY_SERVER_MATRIX=full` (set by `npm run chaos`) runs all.
 * `ONCELY_MATRIX_ONLY` reruns the cases whose id contains it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PostgresKeyStore } from '../../postgres/key-store.js';
import { bundleChild } from '../helpers/bundle-child.js';
import { useTestDatabase } from '../postgres/database.js';
import type { AppConfig } from './app.js';
import { CASES, type CaseContext, MAX_BODY, type ServerCase, TRANSACTION_TIMEOUT } from './cases.js';
import {
  type Answer,
  AppProcess,
  type Database,
  type Post,
  post,
  postgresDatabase,
  raw,
  type StoreKind,
  sqliteDatabase,
} from './env.js';
import { checkInvariants, type Recorded } from './invariants.js';

const full = process.env.ONCELY_SERVER_MATRIX === 'full';
const only = process.env.ONCELY_MATRIX_ONLY;
const selected = CASES.filter((c) => (full || c.fast) && (!only || c.id.includes(only)));

const repo = fileURLToPath(new URL('../..', import.meta.url));
const script = path.join(repo, '.tmp', `server-matrix-app-${process.pid}.mjs`);
const pgdb = useTestDatabase();
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'oncely-server-matrix-'));
  await bundleChild(fileURLToPath(new URL('./app.ts', import.meta.url)), script, ['pg', 'express']);
}, 60_000);
afterAll(async () => {
  await rm(script, { force: true });
  await rm(dir, { recursive: true, force: true });
});

/** Known holes, left failing on purpose: `test.fails` until fixed. */
const HOLES: Record<string, string> = {};

for (const kind of ['pg', 'sqlite'] as StoreKind[]) {
  describe(`server fault matrix on ${kind === 'pg' ? 'PostgresKeyStore' : 'SqliteKeyStore'}`, () => {
    let config: AppConfig;
    let db: Database;
    let app: AppProcess;
    const extra: AppProcess[] = [];
    const start = async (): Promise<AppProcess> => {
      const one = new AppProcess(script, config);
      await one.started();
      return one;
    };

    beforeAll(async () => {
      const base = { maxBodyBytes: MAX_BODY, transactionTimeout: TRANSACTION_TIMEOUT };
      if (kind === 'pg') {
        await new PostgresKeyStore({ pool: pgdb.admin }).migrate();
        await pgdb.admin.query(
          'CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
        );
        config = { store: 'pg', pg: pgdb.config, ...base };
        db = postgresDatabase(pgdb.admin);
      } else {
        const file = path.join(dir, 'shop.db');
        const setup = new DatabaseSync(file);
        setup.exec('CREATE TABLE ledger (id INTEGER PRIMARY KEY, key TEXT NOT NULL, created_at INTEGER NOT NULL)');
        setup.close();
        config = { store: 'sqlite', file, ...base };
        db = sqliteDatabase(file);
      }
      app = await start();
    }, 60_000);
    afterAll(async () => {
      await Promise.all([app, ...extra].map((one) => one?.kill()));
    });

    const cases = selected.filter((c) => c.stores.includes(kind));
    for (const c of cases) {
      const hole = HOLES[`${c.id}@${kind}`];
      (hole ? test.fails : test)(`${c.id}: ${c.fault}`, { timeout: 60_000 }, async () => {
        const recorded: Recorded = { answers: [], agedAt: new Map(), firstSent: new Map(), apps: [app] };
        const sending = (key: string | undefined, options: Post | undefined) => {
          if (key !== undefined && !recorded.firstSent.has(key))
            recorded.firstSent.set(key, options?.body ?? JSON.stringify({ amount: 5 }));
        };
        const keep = async (answer: Promise<Answer>) => {
          const a = await answer;
          recorded.answers.push(a);
          return a;
        };
        const ctx: CaseContext = {
          kind,
          key: (name) => `${c.id}-${name}`,
          post: (key, options) => {
            sending(key, options);
            return keep(post(app.url, key, options));
          },
          raw: (text) => keep(raw(app.url, text)),
          // Its key is not retried: the final retry would send a small JSON body instead.
          rawChunked: (_key, text, bytes) => keep(raw(app.url, text, 5_000, bytes)),
          app: () => app,
          restart: async () => {
            await app.kill();
            app = await start();
            recorded.apps.push(app);
          },
          more: async (n) => {
            const started = await Promise.all(Array.from({ length: n }, start));
            extra.push(...started);
            recorded.apps.push(...started);
            return started.map((one) => one.url);
          },
          postTo: (url, key, options) => {
            sending(key, options);
            return keep(post(url, key, options));
          },
          db: {
            ...db,
            age: async (key) => {
              await db.age(key);
              recorded.agedAt.set(key, recorded.answers.length);
            },
          },
        };
        let failed: unknown;
        try {
          await c.run(ctx);
        } catch (error) {
          failed = error;
        }
        const broken = await checkInvariants(
          recorded,
          c.alsoAllowed ?? [],
          c.parserRejects ?? false,
          db,
          app,
          (key, options) => post(app.url, key, options),
        );
        await Promise.all(extra.splice(0).map((one) => one.kill()));
        if (failed) throw failed;
        expect(broken).toEqual([]);
      });
    }
  });
}

export type { ServerCase };
