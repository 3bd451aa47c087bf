/**
 * `npm run demo:web`: bundles the checkout page, starts the payments API (Express on
 * `oncely/server`, SQLite in a temp dir) and the page server on two ports (two origins),
 * and prints the page URL.
 *
 *   npm run demo:web -- --page-port 4000 --api-port 4001
 *
 * Faults for playing by hand, from another terminal:
 *   curl -X POST localhost:4001/__control -d '{"drop":1}'            # lose the next response after commit
 *   curl -X POST localhost:4001/__control -d '{"conflictFor":3000}'  # 409 + Retry-After for 3 s
 *   curl -X POST localhost:4001/__control -d '{"hold":true}'         # hold payments; then reload the page
 *   curl -X POST localhost:4001/__control -d '{"release":true}'
 */
import { parseArgs } from 'node:util';
import { buildApp } from './app/build.ts';
import { type ApiServer, startApiServer } from './server/api-server.ts';
import { type StaticServer, startStaticServer } from './server/static-server.ts';

const { values } = parseArgs({
  options: {
    'page-port': { type: 'string', default: process.env.PAGE_PORT ?? '4000' },
    'api-port': { type: 'string', default: process.env.API_PORT ?? '4001' },
  },
});

const isAddressInUse = (error: unknown) => (error as { code?: unknown })?.code === 'EADDRINUSE';

/** Starts on the wanted port, or on any free one when it is taken. */
async function onPort<T>(wanted: number, start: (port: number) => Promise<T>, what: string): Promise<T> {
  try {
    return await start(wanted);
  } catch (error) {
    if (!isAddressInUse(error) || wanted === 0) throw error;
    console.warn(`port ${wanted} is taken; the ${what} uses a free port instead`);
    return start(0);
  }
}

const root = await buildApp();
const api: ApiServer = await onPort(
  Number(values['api-port']),
  (port) =>
    startApiServer({
      port,
      onLog: (entry) =>
        console.log(
          `${new Date(entry.at).toISOString().slice(11, 23)}  ${entry.method} ${entry.path}  key=${entry.key ?? '-'}  → ${entry.status} ${entry.outcome}${entry.dropped ? ' (response dropped)' : ''}`,
        ),
    }),
  'API',
);
const site: StaticServer = await onPort(
  Number(values['page-port']),
  (port) => startStaticServer({ root, port }),
  'page',
);

console.log(`
oncely checkout demo
  page:    ${site.pageUrl(api.url)}
  API:     ${api.url}  (POST /payments, GET /ledger, GET|POST /__control)
  SQLite:  ${api.dbPath}  (oncely/server keys + charges)

Try: double-click Pay; reload while paying; open a second tab; change the total after paying.
Faults: curl -X POST ${api.url}/__control -d '{"drop":1}'   (also conflictFor, failBeforeCommit, delay, hold, release, reset)
Ctrl+C stops both servers.
`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await Promise.all([site.close(), api.close()]);
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
