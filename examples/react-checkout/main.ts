// Smoke check of the React checkout (the e2e app, e2e/app/), without a browser:
// bundles the page as `npm run demo:web` does, serves it and its payments API (Express on
// oncely/server, e2e/server/) on two origins, and checks that the page, its bundle and the
// cross-origin API answer.
// The page's behaviour in a real browser is the Playwright suite's job (npm run test:e2e).
//
//   npm run build && node examples/react-checkout/main.ts
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'oncely';
import { buildApp } from '../../e2e/app/build.ts';
import { startApiServer } from '../../e2e/server/api-server.ts';
import { startStaticServer } from '../../e2e/server/static-server.ts';

const stateDir = mkdtempSync(join(tmpdir(), 'oncely-react-example-'));
const root = await buildApp(); // esbuild: e2e/app/main.tsx → e2e/.build/app.js, `oncely/browser` from dist/
const api = await startApiServer();
const site = await startStaticServer({ root });

try {
  const page = site.pageUrl(api.url);
  console.log(`page: ${page}`);

  const html = await fetch(page);
  assert.equal(html.status, 200);
  assert.match(html.headers.get('content-type') ?? '', /^text\/html/);
  const markup = await html.text();
  assert.match(markup, /<div id="root"><\/div>/);
  assert.match(markup, /<script type="module" src="\/app\.js">/);
  console.log('  GET /        200 text/html, mounts #root and loads /app.js');

  const bundle = await fetch(new URL('/app.js', site.url));
  assert.equal(bundle.status, 200);
  assert.match(bundle.headers.get('content-type') ?? '', /^text\/javascript/);
  const code = await bundle.text();
  assert.ok(code.length > 50_000, `the bundle holds React and oncely (${code.length} bytes)`);
  assert.match(code, /Idempotency-Key/, 'the bundle sends the key header');
  console.log(
    `  GET /app.js  200 text/javascript, ${(code.length / 1024).toFixed(0)} KB (React, oncely/react, oncely/browser)`,
  );

  // The browser preflights the keyed POST from the page's origin: the key header must be allowed.
  const preflight = await fetch(new URL('/payments', api.url), {
    method: 'OPTIONS',
    headers: {
      Origin: site.url,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'idempotency-key, content-type, x-account',
    },
  });
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Idempotency-Key/);
  console.log(`  OPTIONS /payments from ${site.url}: 204, Idempotency-Key allowed`);

  // The page's request, sent from Node through oncely, with the answer dropped after the commit.
  await fetch(new URL('/__control', api.url), { method: 'POST', body: JSON.stringify({ drop: 1 }) });
  process.env.ONCELY_STATE_DIR = stateDir; // the Node default store, in a temp state directory
  const client = createClient({
    baseUrl: api.url,
    scope: 'acct_demo',
    headers: { 'X-Account': 'acct_demo' },
    retry: { baseDelay: 50 },
  });
  // Formed and sent in one step (one store write before the first byte).
  const res = await client.send('checkout:cart_1', 'POST', 'payments', {
    json: { amount: 42, currency: 'EUR', cart: { id: 'cart_1', items: [{ sku: 'tea', qty: 2 }] } },
  });
  await client.close();
  const ledger = (await (await fetch(new URL('/ledger', api.url))).json()) as { count: number };
  console.log(
    `  POST /payments: ${res.status} after ${res.attempts} attempts, replayed ${res.replayed}; ledger: ${ledger.count} charge`,
  );
  assert.equal(res.replayed, true);
  assert.equal(ledger.count, 1, 'one charge');
  console.log('ok: the page serves; open it with `npm run demo:web` to pay by hand');
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await Promise.all([site.close(), api.close()]);
  rmSync(stateDir, { recursive: true, force: true });
}
