import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const dist = fileURLToPath(new URL('./dist/', import.meta.url));

// The SQLite stores' own tests (the intent store's conformance included, and the server's
// key store), run by the oldest Node `engines`
// admits (npm run test:node22) over the built files: Node 22.13 cannot run the TypeScript
// sources of the database thread (no type stripping, no `module.registerHooks`), and
// users run dist/. The kill-and-resume on Node 22.13 is in test/runtimes/.
export default defineConfig({
  resolve: {
    alias: [{ find: /^(?:\.\.\/)+(src|node)\/(.*)\.js$/, replacement: `${dist}$1/$2.js` }],
  },
  test: {
    include: ['test/store-sqlite.test.ts', 'test/server-sqlite.test.ts'],
    environment: 'node',
    testTimeout: 30_000,
  },
});
