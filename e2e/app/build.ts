/**
 * Bundles the demo page with esbuild into `e2e/.build/` (gitignored). The library is
 * imported by its package name and resolves through package.json `exports` to `dist/`
 * (run `npm run build` first); the `browser` condition picks the IndexedDB defaults.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const APP_DIR = dirname(fileURLToPath(import.meta.url));
export const BUILD_DIR = join(APP_DIR, '..', '.build');

export async function buildApp({ minify = true }: { minify?: boolean } = {}): Promise<string> {
  mkdirSync(BUILD_DIR, { recursive: true });
  await build({
    entryPoints: [join(APP_DIR, 'main.tsx')],
    outfile: join(BUILD_DIR, 'app.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    jsx: 'automatic',
    sourcemap: true,
    minify,
    define: { 'process.env.NODE_ENV': JSON.stringify('production') },
    logLevel: 'warning',
  });
  // The service worker is a classic script at the root, so its scope is the whole page.
  await build({
    entryPoints: [join(APP_DIR, 'sw.ts')],
    outfile: join(BUILD_DIR, 'sw.js'),
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'chrome120',
    minify,
    logLevel: 'warning',
  });
  copyFileSync(join(APP_DIR, 'index.html'), join(BUILD_DIR, 'index.html'));
  return BUILD_DIR;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = await buildApp();
  console.log(`built the checkout page into ${dir}`);
}
