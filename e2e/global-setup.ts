/** Playwright global setup: checks that dist/ and Chromium exist, and bundles the page once. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { APP_DIR, buildApp } from './app/build.ts';
import { CHROMIUM_PATH } from './chromium.ts';

export default async function globalSetup(): Promise<void> {
  const dist = join(APP_DIR, '..', '..', 'dist', 'src', 'react', 'index.js');
  if (!existsSync(dist)) throw new Error(`${dist} is missing: run \`npm run build\` before the e2e suite.`);
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(`${CHROMIUM_PATH} is missing: run \`sh e2e/install-chromium.sh\` (Debian's chromium package).`);
  await buildApp();
}
