// Packs oncely with `npm pack`, installs the tarball into a scratch project outside the
// source tree, and checks that every entry point imports at runtime and that its types
// resolve under TypeScript's nodenext resolution. Run by `npm test` (after the build).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const scratch = mkdtempSync(join(tmpdir(), 'oncely-pack-'));
const run = (cmd, args, cwd) =>
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });

try {
  const tarball = run('npm', ['pack', '--silent', '--pack-destination', scratch], repo).trim().split('\n').pop();
  const files = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--silent'], repo))[0].files.map((f) => f.path);
  if (files.some((f) => f.startsWith('src/') || f.startsWith('test/') || f.startsWith('node_modules/'))) {
    throw new Error(
      `the package ships source or test files: ${files.filter((f) => !f.startsWith('dist/')).join(', ')}`,
    );
  }
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', join(scratch, tarball)], scratch);
  // Optional peers (react, msw) and type packages come from the repo's own install.
  for (const name of ['react', 'msw', '@types/react', '@types/node']) {
    const target = join(scratch, 'node_modules', ...name.split('/'));
    run('mkdir', ['-p', join(target, '..')], scratch);
    symlinkSync(join(repo, 'node_modules', ...name.split('/')), target);
  }
  const entries = ['oncely', 'oncely/react', 'oncely/mock', 'oncely/browser', 'oncely/node', 'oncely/check'];
  writeFileSync(
    join(scratch, 'check.ts'),
    `${entries.map((e, i) => `import * as m${i} from '${e}';`).join('\n')}
import { createClient, MemoryStore, type IntentResponse } from 'oncely';
const client = createClient({ baseUrl: 'http://127.0.0.1:1/', store: new MemoryStore() });
// Type-level only: never called.
const typed = (): Promise<IntentResponse<unknown>> => client.intent('x').then((i) => i.post('p', { json: {} }));
void typed;
await client.close();
const modules = { ${entries.map((e, i) => `'${e}': m${i}`).join(', ')} };
for (const [name, m] of Object.entries(modules)) {
  if (Object.keys(m).length === 0) throw new Error(name + ' exports nothing');
  console.log(name + ': ' + Object.keys(m).length + ' exports');
}
`,
  );
  writeFileSync(
    join(scratch, 'tsconfig.json'),
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
      files: ['check.ts'],
    }),
  );
  run(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', scratch], scratch);
  process.stdout.write(run(process.execPath, ['check.ts'], scratch));
  // The README's quick start, run as written against the installed package.
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const quickStart = /## Quick start\s+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!quickStart) throw new Error('README.md has no ```ts block under "## Quick start"');
  writeFileSync(join(scratch, 'quick-start.ts'), quickStart);
  const stateDir = join(scratch, 'state');
  const output = execFileSync(process.execPath, ['quick-start.ts'], {
    cwd: scratch,
    env: { ...process.env, ONCELY_STATE_DIR: stateDir },
    encoding: 'utf8',
  });
  if (!/^201 \S+ false 1$/m.test(output)) throw new Error(`the quick start printed ${JSON.stringify(output)}`);
  console.log(`quick start ran as written: ${output.trim()}`);
  // `npx oncely check` from the installed tarball, against a contract server on 127.0.0.1.
  writeFileSync(
    join(scratch, 'cli-check.ts'),
    `import { execFile } from 'node:child_process';
import { createContractServer } from 'oncely/mock';
import { listenContractServer } from 'oncely/node';
const http = await listenContractServer(createContractServer({ keyFormat: 'bare' }));
const child = execFile('npx', ['--no-install', 'oncely', 'check', http.url + '/payments', '--json', '{"amount":1000}'], { encoding: 'utf8' });
let out = '';
child.stdout.on('data', (chunk) => (out += chunk));
const code = await new Promise((resolve) => child.on('close', resolve));
await http.close();
if (code !== 0 || !out.includes('encodeKey: (key) => key')) throw new Error('npx oncely check exited ' + code + ':\\n' + out);
console.log('npx oncely check ran from the tarball: exit 0, suggested a bare key');
`,
  );
  process.stdout.write(run(process.execPath, ['cli-check.ts'], scratch));
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
  console.log(
    `pack-check: ${tarball} (${files.length} files) imports and type-checks from ${entries.length} entry points, version ${pkg.version}`,
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
