// Runs the TanStack checkout check (./check.tsx) in Node. Node strips types but not JSX,
// so esbuild compiles check.tsx and checkout.tsx first (packages stay external: `oncely`
// resolves by its package name to dist/, React and TanStack from node_modules).
//
//   npm run build && node examples/tanstack-checkout/main.ts
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const outfile = join(here, '.build', 'check.js'); // inside the package, so `oncely` self-resolves
mkdirSync(dirname(outfile), { recursive: true });
await build({
  entryPoints: [join(here, 'check.tsx')],
  outfile,
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node22',
  jsx: 'automatic',
  logLevel: 'warning',
});
await import(pathToFileURL(outfile).href);
