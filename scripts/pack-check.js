// The package as a user gets it. Packs oncely with `npm pack` from no `dist/` (prepack
// builds), lints the tarball with publint and @arethetypeswrong/cli, then installs it in two
// scratch projects outside the source tree, from the npm registry only:
// - bare: the project the README's quick start makes (`npm init -y`, so `"type": "commonjs"`),
//   its shell steps run verbatim but for `npm install oncely`, which installs the tarball;
//   no optional peer. Every peer-free entry imports and type-checks (skipLibCheck off); the
//   quick start, saved as the README says, type-checks and runs as written, twice, with
//   its state directory in the scratch project; the edge export conditions resolve to the core entry, which asks
//   for a store, and a workerd bundle of it needs no Node built-in.
// - full: every optional peer (msw, react). Every entry imports and type-checks; the MSW
//   adapter mounts the contract server.
// Run by `npm test` (after the build).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const repo = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const root = mkdtempSync(join(tmpdir(), 'oncely-pack-'));
const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');

const run = (cmd, args, cwd, env = process.env) =>
  execFileSync(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
const step = (text) => console.log(`pack-check: ${text}`);
const fail = (text) => {
  throw new Error(`pack-check: ${text}`);
};
/** The version the repository's own install has, so scratch installs match what the tests ran. */
const installed = (name) =>
  JSON.parse(readFileSync(join(repo, 'node_modules', ...name.split('/'), 'package.json'), 'utf8')).version;

/** Entries of the exports map, as import specifiers. */
const entries = Object.keys(pkg.exports)
  .filter((subpath) => subpath !== './package.json')
  .map((subpath) => (subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`));
/** Entries that need an optional peer, and which. Every other entry must work with none. */
const PEER_ENTRIES = { 'oncely/react': 'react', 'oncely/mock/msw': 'msw', 'oncely/otel': '@opentelemetry/api' };
/** Entries whose types name a peer their code never loads: they must import without it. */
const TYPE_PEER_ENTRIES = { 'oncely/tanstack': '@tanstack/query-core' };
const bareEntries = entries.filter((entry) => !(entry in PEER_ENTRIES) && !(entry in TYPE_PEER_ENTRIES));

function pack() {
  // From no dist/, as a fresh clone: `prepack` must build everything the exports name.
  rmSync(join(repo, 'dist'), { recursive: true, force: true });
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', root], repo));
  const files = info.files.map((file) => file.path);
  const strays = files.filter((file) => /^(src|test|e2e|node_modules|scripts)\//.test(file));
  if (strays.length > 0) fail(`the package ships source or test files: ${strays.join(', ')}`);
  for (const file of ['LICENSE', 'README.md', 'CHANGELOG.md', 'package.json']) {
    if (!files.includes(file)) fail(`the package lacks ${file}`);
  }
  const targets = JSON.stringify(pkg.exports).match(/\.\/dist\/[^"]+/g) ?? [];
  const absent = targets.filter((target) => !files.includes(target.slice(2)));
  if (absent.length > 0) fail(`export targets missing from the tarball: ${absent.join(', ')}`);
  step(`packed ${info.filename} (${files.length} files, ${targets.length} export targets present)`);
  return join(root, info.filename);
}

function lint(tarball) {
  // Both exit non-zero on errors; warnings and suggestions are printed, not fatal.
  const publint = run(
    process.execPath,
    [join(repo, 'node_modules', 'publint', 'src', 'cli.js'), 'run', tarball, '--pack', 'false'],
    repo,
  );
  const said = publint.split('\n').filter((line) => line.trim() && !/^(Running publint|Unpacking|Linting)/.test(line));
  step(`publint: no errors (${said.join(' ').trim()})`);
  const attw = spawnSync(
    process.execPath,
    [
      join(repo, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js'),
      tarball,
      '--profile',
      'esm-only',
      '--no-definitely-typed',
      '--format',
      'table-flipped',
      '--no-emoji',
      '--no-color',
    ],
    { cwd: repo, encoding: 'utf8' },
  );
  if (attw.status !== 0) fail(`@arethetypeswrong/cli found problems:\n${attw.stdout}${attw.stderr}`);
  step('attw --profile esm-only: no problems');
}

/** A scratch project with the tarball and `extra` packages installed from the registry. */
function scratch(name, tarball, extra) {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `scratch-${name}`, private: true, type: 'module' }));
  const args = ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline', tarball, ...extra];
  run('npm', args, dir);
  return dir;
}

/** Type-check `files` in `dir` as a strict nodenext consumer, declaration files included. */
function typecheck(dir, files) {
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        target: 'es2023',
        strict: true,
        noEmit: true,
        types: ['node'],
        skipLibCheck: false,
        lib: ['es2023', 'dom'],
      },
      files,
    }),
  );
  run(process.execPath, [tsc, '-p', dir], dir);
}

/** Imports each entry at runtime and checks it exports something. */
function importsScript(list) {
  return `${list.map((e, i) => `import * as m${i} from '${e}';`).join('\n')}
const modules = { ${list.map((e, i) => `'${e}': m${i}`).join(', ')} };
for (const [name, m] of Object.entries(modules)) {
  if (Object.keys(m).length === 0) throw new Error(name + ' exports nothing');
}
console.log(Object.keys(modules).length + ' entries import');
`;
}

/** The README's quick start: its shell steps, the file name it says to save the code as, the code. */
function readmeQuickStart() {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const section = /## Quick start\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? fail('README.md has no "## Quick start"');
  const shell = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? fail('the quick start has no ```sh block');
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? fail('the quick start has no ```ts block');
  const file = /Save this as `([^`]+)`/.exec(section)?.[1] ?? fail('the quick start says no file name');
  const command = /Run `node ([^`]+)`/.exec(section)?.[1] ?? fail('the quick start says no command');
  return { shell, code, file, command };
}

/** Runs the quick start's shell steps in `root`, `npm install oncely` taking the tarball; returns the project made. */
function readmeProject(tarball, shell) {
  const project = /mkdir (\S+)/.exec(shell)?.[1] ?? fail('the quick start makes no directory');
  const steps = shell.replace(/^npm install oncely$/m, `npm install --no-audit --no-fund --prefer-offline ${tarball}`);
  if (steps === shell) fail('the quick start has no "npm install oncely" line');
  run('sh', ['-e', '-c', steps], root);
  const dir = join(root, project);
  const type = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).type;
  step(`the quick start's steps made ${project} with npm init -y ("type": ${JSON.stringify(type)})`);
  // For the type-check below only: the README's user needs no @types/node to run the quick start.
  run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', `@types/node@${installed('@types/node')}`],
    dir,
  );
  return dir;
}

async function checkBare(tarball) {
  const quick = readmeQuickStart();
  const dir = readmeProject(tarball, quick.shell);
  for (const peer of Object.values(PEER_ENTRIES)) {
    if (existsSync(join(dir, 'node_modules', peer))) fail(`the bare project got the optional peer ${peer}`);
  }
  // `.mts`: the project is CommonJS, as `npm init -y` makes it.
  writeFileSync(join(dir, 'imports.mts'), importsScript(bareEntries));
  writeFileSync(join(dir, quick.file), quick.code);
  typecheck(dir, ['imports.mts', quick.file]);
  run(process.execPath, ['imports.mts'], dir);
  step(`bare (no optional peer): ${bareEntries.join(', ')} import and type-check`);

  // A peer entry fails only for want of its peer, and says which.
  for (const [entry, peer] of Object.entries(PEER_ENTRIES)) {
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', `await import('${entry}')`], {
      cwd: dir,
      encoding: 'utf8',
    });
    if (result.status === 0 || !result.stderr.includes(`Cannot find package '${peer}'`)) {
      fail(`${entry} without ${peer} should fail to import for want of ${peer}; got ${result.stderr || 'success'}`);
    }
  }

  for (const entry of Object.keys(TYPE_PEER_ENTRIES))
    run(process.execPath, ['--input-type=module', '-e', `await import('${entry}')`], dir);

  // The state directory lives in the scratch project, so a second run finds the first's
  // keys there (and nothing is left in the real home).
  const stateDir = join(dir, 'state');
  const env = { ...process.env, ONCELY_STATE_DIR: stateDir, HOME: join(dir, 'home'), XDG_STATE_HOME: '' };
  const args = quick.command.split(' ');
  const first = run(process.execPath, args, dir, env);
  if (!/^201 false 1$/m.test(first)) fail(`the quick start printed ${JSON.stringify(first)}, not "201 false 1"`);
  if (!existsSync(stateDir) || readdirSync(stateDir).length === 0)
    fail(`the quick start stored nothing in ${stateDir}`);
  const second = run(process.execPath, args, dir, env);
  if (/^201 /m.test(second)) fail(`the second run of the quick start paid again: ${JSON.stringify(second)}`);
  step(
    `quick start (node ${quick.command}) ran as written, twice: ${JSON.stringify(first.trim())}, then ${JSON.stringify(second.trim())}`,
  );

  // `npx oncely check` from the installed tarball, against a contract server on 127.0.0.1.
  writeFileSync(
    join(dir, 'cli-check.mts'),
    `import { execFile } from 'node:child_process';
import { createContractServer } from 'oncely/mock';
import { listenContractServer } from 'oncely/node';
const contract = createContractServer({ keyFormat: 'bare' });
// The effect takes 150 ms, as a real one does: the check's race burst overlaps at the server
// (an instant effect leaves the race unmeasured: INCONCLUSIVE, exit 3).
contract.inject({ fault: 'delay', ms: 150, times: Number.POSITIVE_INFINITY });
const http = await listenContractServer(contract);
const child = execFile('npx', ['--no-install', 'oncely', 'check', http.url + '/payments', '--json', '{"amount":1000}'], { encoding: 'utf8' });
let out = '';
child.stdout.on('data', (chunk) => (out += chunk));
const code = await new Promise((resolve) => child.on('close', resolve));
await http.close();
if (code !== 0 || !out.includes('encodeKey: (key) => key')) throw new Error('npx oncely check exited ' + code + ':\\n' + out);
console.log('exit 0, suggested a bare key');
`,
  );
  step(`npx oncely check ran from the tarball: ${run(process.execPath, ['cli-check.mts'], dir, env).trim()}`);

  // Edge runtimes get the core entry: no platform store, a clear error instead.
  const edge = `import { createClient, InvalidArgumentError } from 'oncely';
const where = import.meta.resolve('oncely');
if (!where.endsWith('/oncely/dist/src/index.js')) throw new Error('resolved to ' + where);
try {
  createClient({ baseUrl: 'https://api.example.com/' });
  throw new Error('createClient without a store did not throw');
} catch (error) {
  if (!(error instanceof InvalidArgumentError) || !/store/.test(error.message)) throw error;
}
console.log('core entry, asks for a store');
`;
  writeFileSync(join(dir, 'edge.mjs'), edge);
  for (const condition of ['workerd', 'worker', 'edge-light'])
    run(process.execPath, [`--conditions=${condition}`, 'edge.mjs'], dir);
  const plain = run(process.execPath, ['--input-type=module', '-e', "console.log(import.meta.resolve('oncely'))"], dir);
  if (!plain.trim().endsWith('/oncely/dist/node/default.js')) fail(`Node resolved oncely to ${plain.trim()}`);
  step('workerd, worker, edge-light resolve to the core entry, which asks for a store; Node gets the node entry');
  await bundlesForWorkerd(dir);
}

/** A Workers bundle of the core entry (platform neutral: a `node:` import would not resolve). */
async function bundlesForWorkerd(dir) {
  const { build } = await import(pathToFileURL(join(repo, 'node_modules', 'esbuild', 'lib', 'main.js')).href);
  const result = await build({
    stdin: { contents: "export { createClient, MemoryStore } from 'oncely';", resolveDir: dir },
    bundle: true,
    write: false,
    platform: 'neutral',
    format: 'esm',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    metafile: true,
    logLevel: 'silent',
  });
  const ours = Object.keys(result.metafile.inputs).filter((file) => file.includes('node_modules/oncely/'));
  if (
    !ours.some((file) => file.endsWith('oncely/dist/src/index.js')) ||
    ours.some((file) => /\/dist\/(node|browser)\//.test(file))
  ) {
    fail(`the workerd bundle took ${ours.join(', ')}`);
  }
  step(
    `a workerd bundle of the core entry needs no Node built-in (${Math.round(result.outputFiles[0].contents.length / 1024)} KB)`,
  );
}

function checkFull(tarball) {
  const peers = ['msw', 'react', '@types/react', '@types/node', '@tanstack/query-core', '@opentelemetry/api'].map(
    (name) => `${name}@${installed(name)}`,
  );
  const dir = scratch('full', tarball, peers);
  writeFileSync(join(dir, 'imports.ts'), importsScript(entries));
  writeFileSync(
    join(dir, 'msw.ts'),
    `import { setupServer } from 'msw/node';
import { MemoryStore } from 'oncely';
import { createContractServer } from 'oncely/mock';
import { mswHandlers } from 'oncely/mock/msw';
import { createClient } from 'oncely/node';
import { useIdempotentMutation } from 'oncely/react';

if (typeof useIdempotentMutation !== 'function') throw new Error('oncely/react has no useIdempotentMutation');
const contract = createContractServer();
const msw = setupServer(...mswHandlers(contract, { baseUrl: 'https://api.test' }));
msw.listen({ onUnhandledFrame: 'error' });
const api = createClient({ baseUrl: 'https://api.test/', store: new MemoryStore() });
const intent = await api.intent('checkout:1');
contract.inject({ fault: 'drop-after-commit' });
const res = await intent.post('payments', { json: { amount: 1 } });
if (!res.replayed || contract.effects(intent.key) !== 1) throw new Error('expected one effect and a replay');
await api.close();
msw.close();
console.log('msw: one effect over a dropped response');
`,
  );
  typecheck(dir, ['imports.ts', 'msw.ts']);
  run(process.execPath, ['imports.ts'], dir);
  run(process.execPath, ['msw.ts'], dir);
  step(`full (${peers.join(', ')}): ${entries.join(', ')} import and type-check; the MSW adapter works`);
}

try {
  const tarball = pack();
  lint(tarball);
  await checkBare(tarball);
  checkFull(tarball);
  step(`${pkg.name}@${pkg.version} ok`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
