// `npm run test:examples`: runs every example (`examples/<name>/main.ts`) as a user would,
// one at a time, with the project's Node, and fails if any exits non-zero or hangs.
// Examples import `oncely` by its package name, which resolves through package.json
// `exports` to dist/: the npm script builds first.
//
//   node scripts/run-examples.js [name…]   (default: every example)
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = join(root, 'examples');
const TIMEOUT_MS = 120_000;

if (!existsSync(join(root, 'dist', 'node', 'default.js'))) {
  console.error('run-examples: dist/ is missing; run `npm run build` first (npm run test:examples does).');
  process.exit(1);
}

const wanted = process.argv.slice(2);
const examples = readdirSync(dir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(dir, entry.name, 'main.ts')))
  // Needs a PostgreSQL server: test/store-postgres-example.test.ts runs it against a throwaway cluster.
  .filter((entry) => !entry.name.startsWith('postgres-'))
  .map((entry) => entry.name)
  .filter((name) => wanted.length === 0 || wanted.includes(name))
  .sort();
if (examples.length === 0) {
  console.error(`run-examples: no example found${wanted.length ? ` named ${wanted.join(', ')}` : ''}`);
  process.exit(1);
}

function run(name) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [join(dir, name, 'main.ts')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => {
      output += `\nrun-examples: killed after ${TIMEOUT_MS / 1000} s\n`;
      child.kill('SIGKILL');
    }, TIMEOUT_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ name, ok: code === 0, code: code ?? signal, output, seconds: (performance.now() - started) / 1000 });
    });
  });
}

const failed = [];
for (const name of examples) {
  const result = await run(name);
  const verbose = process.env.VERBOSE === '1' || !result.ok;
  console.log(`${result.ok ? 'ok  ' : 'FAIL'} examples/${name} (${result.seconds.toFixed(1)} s)`);
  if (verbose) console.log(result.output.replace(/^/gm, '     | '));
  if (!result.ok) failed.push(`${name} (exit ${result.code})`);
}
if (failed.length) {
  console.error(`run-examples: ${failed.length} of ${examples.length} failed: ${failed.join(', ')}`);
  process.exit(1);
}
console.log(`run-examples: all ${examples.length} examples passed`);
