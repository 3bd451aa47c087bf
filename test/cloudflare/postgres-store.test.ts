/**
 * `PostgresStore` with `pg` in local workerd (nodejs_compat, on by default at the config's
 * compatibility date): a Worker forms an intent in a throwaway PostgreSQL cluster over TCP
 * and POSTs it; Node reads the same row back.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresStore } from '../../postgres/postgres-store.js';
import { type Cluster, startCluster } from '../postgres/cluster.js';
import { type Workerd, workerd } from './workerd.js';

let cluster: Cluster;
let worker: Workerd;
let server: Server;
const keys: string[] = [];

beforeAll(async () => {
  cluster = await startCluster({ settings: { listen_addresses: "'127.0.0.1'" } });
  server = createServer((req, res) => {
    keys.push(String(req.headers['idempotency-key']));
    req.resume();
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end('{"id":"pay_1"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  worker = await workerd('worker-postgres.ts');
}, 90_000);

afterAll(async () => {
  await worker?.remove();
  await cluster?.stop();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

it('a Worker on PostgresStore + pg forms and sends an intent; the row is in PostgreSQL, succeeded, under the key sent', async () => {
  const db = `postgres://postgres@127.0.0.1:${cluster.port}/postgres`;
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const response = await fetch(`${worker.url}/checkout?db=${encodeURIComponent(db)}&base=${encodeURIComponent(base)}`, {
    method: 'POST',
  });
  const body = (await response.json()) as { status?: number; key?: string; error?: string };
  expect(body).toMatchObject({ status: 201 });
  expect(keys).toEqual([JSON.stringify(body.key)]);

  const pool = new pg.Pool({ host: '127.0.0.1', port: cluster.port, user: 'postgres', database: 'postgres' });
  try {
    const record = await new PostgresStore({ pool }).get('pg', 'checkout:1');
    expect(record).toMatchObject({ key: body.key, state: 'succeeded', attempts: 1 });
  } finally {
    await pool.end();
  }
}, 60_000);
