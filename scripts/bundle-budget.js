// Bundle budget: what a browser app pays for oncely at page load (esbuild, minified, ESM,
// code splitting, platform browser, react external, gzip level 9), attributed to oncely's own code (dist/) and to
// each dependency (node_modules/) from esbuild's metafile. Three bundles:
// - the checkout: `useIdempotentMutation` from `oncely/react` + `createClient` from
//   `oncely/browser`, what a page with a Pay button ships. It must hold none of what only
//   some apps use (CHECKOUT_MUST_NOT_HOLD): run()/intentFetch() and their classification of
//   a foreign transport, the profiles other than ietf, the mock, OTel. A control bundle that
//   imports each of those proves the check can see it;
// - everything: `export *` of `oncely/browser` and `oncely/react`;
// - `createClient` alone from `oncely` (browser condition): no mock, no React binding.
// Exits 1 over budget or on a leak. Needs `npm run build` first (reads dist/).
//
//   node scripts/bundle-budget.js          print the report, exit 1 on a failure
//   node scripts/bundle-budget.js --json   the same figures as JSON on stdout
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const repo = path.resolve(import.meta.dirname, '..');
const KB = 1024;

/**
 * The enforced budgets, in gzipped bytes: a guard against growth, set just above what the
 * bundles weigh (checkout 25.6 KB / own 24.0 KB; everything 27.9 KB after issue 30). Since issue 30
 * ky is loaded only by a client given ky options (a lazy chunk of about 9 KB gzip, not
 * counted; the direct fetch path and the path cache added 0.4 KB of own code); p-retry (1.8 KB)
 * is kept by decision. Issue 32 §5's click path (a kept lock's section run at once, the first
 * attempt before the loop, hashing without allocations, the hook's deferred pending) added
 * 0.7 KB: checkout 26.6 KB / own 25.0 KB; everything 28.9 KB. Issue 18 §4's TARGET for oncely's own
 * code is missed: about 19.5 KB gzipped without its messages. The report prints both;
 * docs/performance.md has the breakdown.
 */
export const BUDGET = { checkout: { total: 26.8 * KB, own: 25.2 * KB }, everything: { total: 29.2 * KB } };
/** What issue 18 asks for. Reported, not enforced. */
export const TARGET = { checkout: { total: 26 * KB, own: 13 * KB }, everything: { total: 30 * KB } };

export const CHECKOUT =
  "export { useIdempotentMutation } from 'oncely/react';\nexport { createClient } from 'oncely/browser';\n";
const EVERYTHING = "export * from 'oncely/browser';\nexport * from 'oncely/react';\n";

/**
 * What the checkout must not carry, by the files it would come from (metafile inputs) and
 * by strings that survive minification.
 */
const CHECKOUT_MUST_NOT_HOLD = [
  {
    what: "run()'s classification of a foreign transport",
    files: ['dist/src/intent/run.js', 'dist/src/http/thrown.js'],
    markers: ['StripeConnectionError', 'UND_ERR_SOCKET', 'lastResponse'],
  },
  {
    what: 'intentFetch()',
    files: ['dist/src/intent/fetch.js'],
    markers: ['cannot send this Request'],
  },
  {
    what: "derived keys' SHA-1 (derivedKeys)",
    files: ['dist/src/intent/derived-keys.js'],
    markers: ['5b1e2a2e7f594d419c3a0b6f1c6ad7e1'],
  },
  {
    what: 'the stripe profile',
    files: ['dist/src/profiles/stripe.js'],
    markers: ['idempotency_error', 'Stripe-Should-Retry'],
  },
  {
    what: 'the profile variants and profileVariant()',
    files: ['dist/src/profiles/variants.js', 'dist/src/profiles/registry.js'],
    markers: ['ietf-bare', '-variant'],
  },
  { what: 'the mock (oncely/mock)', prefix: 'dist/src/mock/', markers: ['idempotency-key-missing'] },
  { what: 'OTel (oncely/otel)', prefix: 'dist/src/otel/', markers: ['oncely.intent'] },
  {
    what: 'the server half (oncely/server)',
    prefix: 'dist/src/server/',
    markers: ['An idempotent handler must answer'],
  },
  // 0.1.0 was never published: no legacy fingerprint, no FileStore import (that one stays in node/).
  { what: 'the 0.1.0 compatibility code', source: /legacy|0\.1\.0/i },
  { what: 'the CLI (oncely check)', prefix: 'dist/src/cli/' },
  { what: 'the store conformance suite (oncely/testing)', prefix: 'dist/src/testing/', markers: ['store conformance'] },
  { what: 'Node code (node/, postgres/)', prefix: 'dist/node/' },
  { what: 'the PostgreSQL store', prefix: 'dist/postgres/' },
  { what: 'the Cloudflare store (oncely/cloudflare)', prefix: 'dist/cloudflare/' },
];
/** What imports each of them: the controls that prove the rules can see them. */
const CONTROL =
  "export { run, intentFetch, derivedKeys } from 'oncely';\nexport { stripe, ietfBare, profileVariant, profiles } from 'oncely/profiles';\nexport * from 'oncely/mock';\nexport * from 'oncely/otel';\nexport * from 'oncely/check';\nexport { createClient as nodeClient } from 'oncely/node';\nexport * from 'oncely/postgres';\nexport * from 'oncely/server';\nexport * from 'oncely/server/express';\nexport { idempotent as fastifyIdempotent } from 'oncely/server/fastify';\nexport * from 'oncely/testing';\nexport * from 'oncely/cloudflare';\n";

/** What a bundle of `import { createClient } from 'oncely'` must not contain. */
const MUST_SHAKE = [
  { what: 'the mock (oncely/mock)', test: (file) => file.startsWith('dist/src/mock/') },
  { what: 'the React binding (oncely/react)', test: (file) => file.startsWith('dist/src/react/') },
  { what: 'the React observer (mutation-observer)', test: (file) => file === 'dist/src/observer/mutation-observer.js' },
  { what: 'react', test: (file) => /(^|\/)node_modules\/react(-dom)?\//.test(file) },
  { what: 'msw', test: (file) => /(^|\/)node_modules\/(msw|@mswjs)\//.test(file) },
];

const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'));
/** Every package oncely's code may import (a name also covers its subpaths, e.g. `zod/mini`). */
const DEPENDENCIES = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {}), 'react-dom'];

const gzip = (bytes) => gzipSync(bytes, { level: 9 }).length;

/** `node_modules/zod/v4/mini/x.js` → `zod`; `dist/src/x.js` → `oncely`. */
export function origin(file) {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
  if (match) return match[1];
  return file.startsWith('dist/') ? 'oncely' : file;
}

/**
 * oncely's parts, for the share table: the folder a file sits in (`dist/src/intent/call.js`
 * → `oncely intent/`, `dist/browser/x.js` → `oncely browser/`), or the file for the root ones.
 */
export function part(file) {
  if (origin(file) !== 'oncely') return origin(file);
  const rest = file.replace(/^dist\//, '').replace(/^src\//, '');
  const slash = rest.indexOf('/');
  return `oncely ${slash < 0 ? rest.replace(/\.js$/, '') : `${rest.slice(0, slash)}/`}`;
}

/**
 * Bundles `contents` with code splitting, as app bundlers do (Vite, webpack): what a page
 * loads at start is the entry chunk and the chunks it imports statically; a chunk only
 * reached through `import()` (ky, loaded only for an app that gives ky options) is `lazy`,
 * not counted in the size. `inputs` are the loaded chunks' files (the share tables);
 * `everyInput` and `text` cover every chunk (what a bundle must not hold, lazily or not).
 */
export async function bundle(contents, { external = ['react', 'react-dom'] } = {}) {
  const result = await build({
    stdin: { contents, resolveDir: repo, sourcefile: 'bundle-budget-entry.js', loader: 'js' },
    bundle: true,
    write: false,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    external,
    metafile: true,
    splitting: true,
    outdir: path.join(repo, '.tmp/bundle-budget'),
    logLevel: 'silent',
    absWorkingDir: repo,
  });
  const outputs = result.metafile.outputs;
  const entry = Object.keys(outputs).find((file) => outputs[file].entryPoint !== undefined);
  const loaded = new Set();
  for (const queue = [entry]; queue.length > 0; ) {
    const file = queue.pop();
    if (loaded.has(file) || !outputs[file]) continue;
    loaded.add(file);
    for (const { path: next, kind } of outputs[file].imports) if (kind === 'import-statement') queue.push(next);
  }
  const contentsOf = (file) => result.outputFiles.find((f) => f.path === path.join(repo, file)).contents;
  const inputsOf = (files) =>
    files.flatMap((file) =>
      Object.entries(outputs[file].inputs)
        .filter(([, info]) => info.bytesInOutput > 0)
        .map(([input, info]) => ({ file: input, bytes: info.bytesInOutput })),
    );
  const start = Buffer.concat([...loaded].map(contentsOf));
  const lazy = Object.keys(outputs).filter((file) => !loaded.has(file));
  return {
    bytes: start.length,
    gzip: gzip(start),
    inputs: inputsOf([...loaded]),
    everyInput: inputsOf(Object.keys(outputs)),
    lazy: { bytes: lazy.reduce((sum, file) => sum + contentsOf(file).length, 0), inputs: inputsOf(lazy) },
    text: result.outputFiles.map((f) => f.text).join('\n'),
  };
}

/** Minified bytes by key (origin, part or file), largest first, with each one's share. */
function shares(inputs, keyOf) {
  const by = new Map();
  for (const { file, bytes } of inputs) by.set(keyOf(file), (by.get(keyOf(file)) ?? 0) + bytes);
  const total = [...by.values()].reduce((a, b) => a + b, 0);
  return [...by.entries()]
    .map(([name, bytes]) => ({ name, bytes, share: bytes / total }))
    .sort((a, b) => b.bytes - a.bytes);
}

/** The rules of CHECKOUT_MUST_NOT_HOLD that `built` breaks: `[{ what, files, markers }]`. */
export function held(built) {
  return CHECKOUT_MUST_NOT_HOLD.flatMap(({ what, files = [], prefix, markers = [], source }) => {
    const found = built.everyInput
      .map((i) => i.file)
      .filter(
        (file) =>
          files.includes(file) ||
          (prefix !== undefined && file.startsWith(prefix)) ||
          (source !== undefined &&
            file.startsWith('dist/') &&
            source.test(readFileSync(path.join(repo, file), 'utf8'))),
      );
    const strings = markers.filter((marker) => built.text.includes(marker));
    return found.length + strings.length > 0 ? [{ what, files: found, markers: strings }] : [];
  });
}

export async function measure() {
  for (const file of ['dist/browser/index.js', 'dist/src/react/index.js', 'dist/browser/default.js']) {
    if (!existsSync(path.join(repo, file))) throw new Error(`${file} is missing: run \`npm run build\` first`);
  }
  const checkout = await bundle(CHECKOUT);
  // Own code alone, gzipped as such: the same entry with every dependency left external.
  const checkoutOwn = await bundle(CHECKOUT, { external: DEPENDENCIES });
  const everything = await bundle(EVERYTHING);
  const everythingOwn = await bundle(EVERYTHING, { external: DEPENDENCIES });

  const leaks = held(checkout);
  const control = await bundle(CONTROL, { external: [...DEPENDENCIES, 'msw', 'pg', 'node:*'] });
  const seen = new Set(held(control).map((h) => h.what));
  const blind = CHECKOUT_MUST_NOT_HOLD.filter(({ what }) => !seen.has(what));

  // Tree-shaking: only createClient from the root entry, browser condition.
  const shaken = await bundle("import { createClient } from 'oncely';\nexport { createClient };\n");
  const shakeLeaks = MUST_SHAKE.flatMap(({ what, test }) => {
    const files = shaken.everyInput.filter((i) => test(i.file)).map((i) => i.file);
    return files.length > 0 ? [{ what, files }] : [];
  });
  const controls = await bundle("export * from 'oncely/mock';\nexport * from 'oncely/react';\n", {
    external: [...DEPENDENCIES, 'msw'],
  });
  const shakeBlind = MUST_SHAKE.slice(0, 3).filter(({ test }) => !controls.everyInput.some((i) => test(i.file)));
  // Records are validated by hand (src/store/record-schema.ts): no schema library ships.
  const zodFiles = everything.everyInput.filter((i) => origin(i.file) === 'zod').map((i) => i.file);

  const failures = [];
  const over = (what, gz, budget) => {
    if (gz > budget) failures.push(`${what} ${kb(gz)} KB gzip is over the ${kb(budget)} KB budget`);
  };
  over('the checkout', checkout.gzip, BUDGET.checkout.total);
  over("the checkout's own code", checkoutOwn.gzip, BUDGET.checkout.own);
  over('everything', everything.gzip, BUDGET.everything.total);
  for (const leak of leaks)
    failures.push(
      `the checkout holds ${leak.what}: ${[...leak.files, ...leak.markers.map((m) => `"${m}"`)].join(', ')}`,
    );
  for (const { what } of blind)
    failures.push(`the checkout check cannot see ${what} even in a bundle that imports it: fix CHECKOUT_MUST_NOT_HOLD`);
  for (const leak of shakeLeaks)
    failures.push(`createClient alone pulls in ${leak.what}: ${leak.files.slice(0, 3).join(', ')}`);
  for (const { what } of shakeBlind)
    failures.push(`the tree-shaking check cannot see ${what} even in a bundle that imports it: fix MUST_SHAKE`);
  if (zodFiles.length > 0)
    failures.push(`zod is bundled (stored records are validated by hand): ${zodFiles.slice(0, 3).join(', ')}`);

  const files = (inputs) =>
    inputs
      .filter((i) => origin(i.file) === 'oncely')
      .sort((a, b) => b.bytes - a.bytes)
      .map(({ file, bytes }) => ({ file, bytes }));
  return {
    budget: BUDGET,
    target: TARGET,
    checkout: {
      total: { bytes: checkout.bytes, gzip: checkout.gzip },
      own: { bytes: checkoutOwn.bytes, gzip: checkoutOwn.gzip },
      lazy: checkout.lazy,
      origins: shares(checkout.inputs, origin),
      parts: shares(checkout.inputs, part),
      ownFiles: files(checkout.inputs),
    },
    everything: {
      total: { bytes: everything.bytes, gzip: everything.gzip },
      own: { bytes: everythingOwn.bytes, gzip: everythingOwn.gzip },
      origins: shares(everything.inputs, origin),
      parts: shares(everything.inputs, part),
    },
    createClientOnly: {
      bytes: shaken.bytes,
      gzip: shaken.gzip,
      origins: [...new Set(shaken.inputs.map((i) => origin(i.file)))].sort(),
    },
    failures,
  };
}

const kb = (bytes) => (bytes / KB).toFixed(1);

function print(report) {
  const { checkout, everything, createClientOnly, budget, failures } = report;
  const mark = (gz, limit) => (gz <= limit ? 'ok  ' : 'OVER');
  const line = (label, gz, bytes, limit, target) =>
    console.log(
      `  ${mark(gz, limit)} ${label.padEnd(26)} ${kb(gz).padStart(5)} KB gzip  (${kb(bytes).padStart(5)} KB min)   budget ${kb(limit)} KB, target ${kb(target)} KB${gz > target ? ' (missed)' : ''}`,
    );
  console.log('bundle budget (esbuild, minified, ESM, browser; react external; gzip -9)');
  line(
    'checkout, with dependencies',
    checkout.total.gzip,
    checkout.total.bytes,
    budget.checkout.total,
    TARGET.checkout.total,
  );
  line("checkout, oncely's own code", checkout.own.gzip, checkout.own.bytes, budget.checkout.own, TARGET.checkout.own);
  line(
    'everything (export *)',
    everything.total.gzip,
    everything.total.bytes,
    budget.everything.total,
    TARGET.everything.total,
  );
  console.log(
    `  loaded only when used (import()): ${kb(checkout.lazy.bytes)} KB min, from ${[...new Set(checkout.lazy.inputs.map((i) => origin(i.file)))].join(', ') || 'nothing'}`,
  );
  console.log('  the checkout by part (minified bytes, metafile):');
  for (const { name, bytes, share } of checkout.parts)
    console.log(`    ${name.padEnd(18)} ${kb(bytes).padStart(6)} KB  ${(share * 100).toFixed(0).padStart(3)} %`);
  console.log(
    `  oncely's largest files in it (minified KB): ${checkout.ownFiles
      .slice(0, 8)
      .map((f) => `${f.file.replace(/^dist\//, '')} ${kb(f.bytes)}`)
      .join(', ')}`,
  );
  console.log(
    `  createClient alone (browser condition): ${kb(createClientOnly.gzip)} KB gzip, from ${createClientOnly.origins.join(', ')}`,
  );
  if (failures.length === 0)
    console.log(
      'bundle budget: ok (the checkout holds no run()/intentFetch(), other profile, mock, OTel, CLI or Node code)',
    );
  else for (const failure of failures) console.error(`bundle budget: FAIL ${failure}`);
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('bundle-budget.js')) {
  const report = await measure();
  if (process.argv.includes('--json')) console.log(JSON.stringify(report, null, 2));
  else print(report);
  process.exitCode = report.failures.length > 0 ? 1 : 0;
}
