// Builds the API reference (docs/api/) with TypeDoc from the emitted `.d.ts` of every
// entry in package.json `exports`, so it documents exactly what a consumer sees.
// TypeDoc 0.28 needs TypeScript <= 6 and this project compiles with TypeScript 7 (no JS
// API), so TypeDoc and a TypeScript 5.9 it can drive are fetched from the npm registry
// with npx for this run only; neither is a dependency. Run after `npm run build`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const TYPEDOC = 'typedoc@0.28.20';
const TYPESCRIPT = 'typescript@5.9.3';

const repo = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const work = join(repo, '.tmp', 'docs-entries');
const out = join(repo, 'docs', 'api');

/** The leading `/** … *\/` of a file, as its lines without the comment markers. */
function fileComment(text) {
  const match = /^\s*\/\*\*([\s\S]*?)\*\//.exec(text);
  if (!match) return [];
  return match[1]
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim()
    .split('\n');
}

const entries = Object.entries(pkg.exports)
  .filter(([subpath]) => subpath !== './package.json')
  .map(([subpath, target]) => {
    const types = typeof target === 'string' ? target : target.types;
    if (typeof types !== 'string') throw new Error(`exports["${subpath}"] has no "types" condition`);
    return { name: subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`, types: join(repo, types) };
  });

const missing = entries.filter((entry) => !existsSync(entry.types));
if (missing.length > 0) {
  throw new Error(`run \`npm run build\` first: missing ${missing.map((e) => relative(repo, e.types)).join(', ')}`);
}

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
// One stub per entry: the entry's own file comment, named after its import specifier.
const front = [
  `# ${pkg.name} ${pkg.version}: API reference`,
  '',
  pkg.description,
  '',
  '| entry | what it holds |',
  '|---|---|',
];
const stubs = entries.map((entry) => {
  const file = join(work, `${entry.name.replace(/\//g, '__')}.ts`);
  const comment = fileComment(readFileSync(entry.types, 'utf8'));
  front.push(
    `| \`${entry.name}\` | ${
      comment
        .join(' ')
        .replace(/{@link ([^}]+)}/g, '`$1`')
        .replace(/\|/g, '\\|') || '—'
    } |`,
  );
  const specifier = relative(work, entry.types).replace(/\.d\.ts$/, '.js');
  const lines = [...comment, ...(comment.length > 0 ? [''] : []), `@module ${entry.name}`];
  writeFileSync(
    file,
    `/**\n${lines.map((l) => ` * ${l}`.trimEnd()).join('\n')}\n */\nexport * from './${specifier}';\n`,
  );
  return file;
});
front.push('', `Guides, the server contract and the guarantees: the [README](${pkg.homepage}).`);
writeFileSync(join(work, 'README.md'), `${front.join('\n')}\n`);
writeFileSync(
  join(work, 'tsconfig.json'),
  JSON.stringify({
    compilerOptions: {
      target: 'es2023',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      lib: ['es2023', 'dom', 'dom.iterable'],
      types: ['node'],
      typeRoots: [join(repo, 'node_modules', '@types')],
      strict: true,
      skipLibCheck: true,
      noEmit: true,
    },
    files: stubs.map((stub) => relative(work, stub)),
  }),
);

rmSync(out, { recursive: true, force: true });
execFileSync(
  'npx',
  [
    '--yes',
    '-p',
    TYPEDOC,
    '-p',
    TYPESCRIPT,
    'typedoc',
    '--tsconfig',
    join(work, 'tsconfig.json'),
    '--out',
    out,
    '--name',
    `${pkg.name} ${pkg.version}`,
    '--readme',
    join(work, 'README.md'),
    '--disableSources',
    '--excludePrivate',
    '--excludeInternal',
    '--sort',
    'source-order',
    ...stubs.flatMap((stub) => ['--entryPoints', stub]),
  ],
  { cwd: repo, stdio: 'inherit' },
);
console.log(`docs: API reference of ${entries.length} entries in ${relative(repo, out)}/index.html`);
