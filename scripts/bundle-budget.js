// Bundle budget: what a browser app pays for oncely. Bundles `oncely/browser` +
// `oncely/react` (every export kept: the whole public surface) with esbuild, minified,
// ESM, platform browser, react external; gzips it; attributes the bytes to oncely's own
// code (dist/) and to each dependency (node_modules/) from esbuild's metafile; and checks
// that `import { createClient } from 'oncely'` (browser condition) tree-shakes the mock and
// the React binding away. Exits 1 over budget. Needs `npm run build` first (reads dist/).
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
 * bundle weighs today (32.0 KB / 22.0 KB: the click's kept lock, the notes of sent
 * intents and a synchronous SHA-256 added 2 KB; zod/mini left the bundle; of uuid, a chosen
 * library, only v7 ships (1.3 KB min): v4 and the derived v5 keys are minted in
 * src/intent/keys.ts, whose SHA-1 therefore counts as oncely's own code).
 * Issue 13 asks for TARGET, which this bundle misses: without its strings oncely's own code
 * still gzips to about 13 KB, and ky (8.9 KB, one class that does not tree-shake) and
 * p-retry (1.8 KB) are kept by design. The report prints both. Issue 17's boundaries (a bound
 * on every read, `sent` on every error, IntentPendingError, fetch(Request), lease_wait)
 * added 1.1 KB: 33.6 KB / 23.6 KB; offline waits, keepalive, `send()` and the kept lock's
 * report 0.7 KB more. Issue 18 §4 is the one that cuts it (run()/fetch() and profiles
 * reached only by import). Issue 21 moved UUIDv7 from uuid into oncely's own code and
 * redacts keys in errors: own code 24.8 KB; run()'s context fetch 0.3 KB more.
 */
export const BUDGET = { total: 35 * KB, own: 25.5 * KB };
/** What issue 13 asks for. Reported, not enforced. */
export const TARGET = { total: 18 * KB, own: 6 * KB };

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
function origin(file) {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
  if (match) return match[1];
  return file.startsWith('dist/') ? 'oncely' : file;
}

async function bundle(contents, { external = ['react', 'react-dom'] } = {}) {
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
    logLevel: 'silent',
    absWorkingDir: repo,
  });
  const output = result.outputFiles[0];
  const meta = Object.values(result.metafile.outputs)[0];
  const inputs = Object.entries(meta.inputs)
    .filter(([, info]) => info.bytesInOutput > 0)
    .map(([file, info]) => ({ file, bytes: info.bytesInOutput }));
  return { bytes: output.contents.length, gzip: gzip(output.contents), inputs };
}

export async function measure() {
  for (const file of ['dist/browser/index.js', 'dist/src/react/index.js', 'dist/browser/default.js']) {
    if (!existsSync(path.join(repo, file))) throw new Error(`${file} is missing: run \`npm run build\` first`);
  }
  // Everything the two entries export, so nothing is shaken out: the full public surface.
  const surface = "export * from 'oncely/browser';\nexport * from 'oncely/react';\n";
  const full = await bundle(surface);
  // Own code alone, gzipped as such: the same entry with every dependency left external.
  const own = await bundle(surface, { external: DEPENDENCIES });

  const byOrigin = new Map();
  for (const { file, bytes } of full.inputs) byOrigin.set(origin(file), (byOrigin.get(origin(file)) ?? 0) + bytes);
  const rawTotal = [...byOrigin.values()].reduce((a, b) => a + b, 0);
  const origins = [...byOrigin.entries()]
    .map(([name, bytes]) => ({ name, bytes, share: bytes / rawTotal }))
    .sort((a, b) => b.bytes - a.bytes);
  const ownFiles = full.inputs
    .filter((i) => origin(i.file) === 'oncely')
    .sort((a, b) => b.bytes - a.bytes)
    .map(({ file, bytes }) => ({ file, bytes }));
  // Records are validated by hand (src/store/record-schema.ts): no schema library ships.
  const zodFiles = full.inputs.filter((i) => origin(i.file) === 'zod').map((i) => i.file);

  // Tree-shaking: only createClient from the root entry, browser condition.
  const shaken = await bundle("import { createClient } from 'oncely';\nexport { createClient };\n");
  const leaks = MUST_SHAKE.flatMap(({ what, test }) => {
    const files = shaken.inputs.filter((i) => test(i.file)).map((i) => i.file);
    return files.length > 0 ? [{ what, files }] : [];
  });
  const shakenOrigins = [...new Set(shaken.inputs.map((i) => origin(i.file)))].sort();
  // Controls: bundles that do import the mock and the hook must be caught, or the check is blind.
  const controls = await bundle("export * from 'oncely/mock';\nexport * from 'oncely/react';\n", {
    external: [...DEPENDENCIES, 'msw'],
  });
  const blind = MUST_SHAKE.slice(0, 3).filter(({ test }) => !controls.inputs.some((i) => test(i.file)));

  const failures = [];
  if (full.gzip > BUDGET.total)
    failures.push(`total ${kb(full.gzip)} KB gzip is over the ${kb(BUDGET.total)} KB budget`);
  if (own.gzip > BUDGET.own)
    failures.push(`oncely's own code ${kb(own.gzip)} KB gzip is over the ${kb(BUDGET.own)} KB budget`);
  for (const leak of leaks)
    failures.push(`createClient alone pulls in ${leak.what}: ${leak.files.slice(0, 3).join(', ')}`);
  for (const { what } of blind)
    failures.push(`the tree-shaking check cannot see ${what} even in a bundle that imports it: fix MUST_SHAKE`);
  if (zodFiles.length > 0)
    failures.push(`zod is bundled (stored records are validated by hand): ${zodFiles.slice(0, 3).join(', ')}`);

  return {
    budget: BUDGET,
    target: TARGET,
    total: { bytes: full.bytes, gzip: full.gzip },
    own: { bytes: own.bytes, gzip: own.gzip },
    origins,
    ownFiles,
    createClientOnly: { bytes: shaken.bytes, gzip: shaken.gzip, origins: shakenOrigins },
    failures,
  };
}

const kb = (bytes) => (bytes / KB).toFixed(1);

function print(report) {
  const { total, own, origins, ownFiles, createClientOnly, budget, failures } = report;
  const mark = (ok) => (ok ? 'ok  ' : 'OVER');
  console.log('bundle budget: oncely/browser + oncely/react (esbuild, minified, ESM, browser; react external)');
  console.log(
    `  ${mark(total.gzip <= budget.total)} total with dependencies  ${kb(total.gzip).padStart(5)} KB gzip  (${kb(total.bytes)} KB min)   budget ${kb(budget.total)} KB, target ${kb(TARGET.total)} KB${total.gzip > TARGET.total ? ' (missed)' : ''}`,
  );
  console.log(
    `  ${mark(own.gzip <= budget.own)} oncely's own code        ${kb(own.gzip).padStart(5)} KB gzip  (${kb(own.bytes)} KB min)   budget ${kb(budget.own)} KB, target ${kb(TARGET.own)} KB${own.gzip > TARGET.own ? ' (missed)' : ''}`,
  );
  console.log('  minified bytes by origin (metafile):');
  for (const { name, bytes, share } of origins)
    console.log(`    ${name.padEnd(16)} ${kb(bytes).padStart(6)} KB  ${(share * 100).toFixed(0).padStart(3)} %`);
  console.log(
    `  oncely's largest files (minified): ${ownFiles
      .slice(0, 8)
      .map((f) => `${f.file.replace(/^dist\//, '')} ${kb(f.bytes)}`)
      .join(', ')}`,
  );
  console.log(
    `  createClient alone (browser condition): ${kb(createClientOnly.gzip)} KB gzip, from ${createClientOnly.origins.join(', ')}`,
  );
  if (failures.length === 0) console.log('bundle budget: ok');
  else for (const failure of failures) console.error(`bundle budget: FAIL ${failure}`);
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('bundle-budget.js')) {
  const report = await measure();
  if (process.argv.includes('--json')) console.log(JSON.stringify(report, null, 2));
  else print(report);
  process.exitCode = report.failures.length > 0 ? 1 : 0;
}
