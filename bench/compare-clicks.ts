/**
 * Two builds' clicks against each other in one Chromium, interleaved: the way to tell a
 * change to the click path from the noise of a shared machine. Each build's bench page
 * (browser-page.ts, bundled against that build's dist) is served from its own origin in its
 * own browser context; each round clicks `perRound` times on one, then the other (order
 * alternating), after a warm-up round. Prints each build's handler → fetch median and p95,
 * event → fetch, the per-round medians and their ratio (below 1: the second is faster).
 *
 *   npm run build && cp -r dist /tmp/after && (build the other commit into /tmp/before/dist)
 *   node bench/compare-clicks.ts /tmp/before/dist /tmp/after [rounds = 10] [perRound = 20] [variant = weblocks]
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import path from 'node:path';
import { chromium, type Page } from '@playwright/test';
import type { Plugin } from 'esbuild';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../e2e/chromium.ts';
import { bundlePage } from './browser.ts';
import type { Click, Variant } from './browser-page.ts';
import { median, quantile } from './stats.ts';

const [distA, distB, roundsArg, perArg, variantArg] = process.argv.slice(2);
if (!distA || !distB)
  throw new Error('usage: node bench/compare-clicks.ts <dist> <dist> [rounds] [perRound] [variant]');
const rounds = Number(roundsArg ?? 10);
const perRound = Number(perArg ?? 20);
const variant = (variantArg ?? 'weblocks') as Variant;

/** The page's imports of oncely, resolved in a given dist (as the package's browser exports do). */
const ENTRIES: Record<string, string> = {
  oncely: 'browser/default.js',
  'oncely/browser': 'browser/index.js',
  'oncely/react': 'src/react/index.js',
  'oncely/tanstack': 'src/tanstack/index.js',
};
const pinTo = (dist: string): Plugin => ({
  name: 'pin-oncely',
  setup(b) {
    b.onResolve({ filter: /^oncely(\/.*)?$/ }, (args) => ({ path: path.join(dist, ENTRIES[args.path]!) }));
  },
});
const bundle = (dist: string) =>
  bundlePage({ plugins: [pinTo(dist)], nodePaths: [path.join(import.meta.dirname, '../node_modules')] });

/** Cross-origin isolation: performance.now() at 5 µs rather than 100 µs. */
const ISOLATED = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };
const html = '<!doctype html><meta charset="utf-8"><div id="root"></div><script type="module" src="/page.js"></script>';

async function serve(script: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html', ...ISOLATED }).end(html);
      else if (req.url === '/page.js')
        res.writeHead(200, { 'content-type': 'text/javascript', ...ISOLATED }).end(script);
      else if (req.url === '/ok') res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"p"}');
      else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

interface Side {
  dist: string;
  server: Server;
  page: Page;
  handler: number[];
  event: number[];
  rounds: number[];
}

/** What the page exposes (evaluated in the page: no closure over this module). */
interface Bench {
  benchReady?: boolean;
  benchMount(v: Variant): Promise<void>;
  benchLastClick(): Promise<Click>;
}
const load = loadavg();
const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
try {
  const sides: Side[] = [];
  for (const dist of [distA, distB].map((d) => path.resolve(d))) {
    const { server, origin } = await serve(await bundle(dist));
    const page = await (await browser.newContext()).newPage();
    page.on('pageerror', (error) => console.error('page error', error.message));
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => (globalThis as unknown as Bench).benchReady === true);
    sides.push({ dist, server, page, handler: [], event: [], rounds: [] });
  }
  for (let round = -1; round < rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const handler: number[] = [];
      for (let i = 0; i < perRound; i++) {
        await side.page.evaluate((v) => (globalThis as unknown as Bench).benchMount(v), variant);
        await side.page.click('#pay');
        const click = await side.page.evaluate(() => (globalThis as unknown as Bench).benchLastClick());
        handler.push((click.fetch - click.handler) * 1000);
        side.event.push((click.fetch - click.event) * 1000);
      }
      if (round < 0)
        side.event.length = 0; // the warm-up round
      else {
        side.handler.push(...handler);
        side.rounds.push(median(handler));
      }
    }
  }
  for (const s of sides)
    console.log(
      `${s.dist}: handler → fetch median ${median(s.handler).toFixed(0)} µs, p95 ${quantile(s.handler, 0.95).toFixed(0)}; event → fetch ${median(s.event).toFixed(0)} µs (${s.handler.length} clicks); per round ${s.rounds.map((x) => x.toFixed(0)).join(' ')}`,
    );
  const ratios = sides[1]!.rounds.map((b, i) => b / sides[0]!.rounds[i]!);
  console.log(
    `second / first per round: ${ratios.map((x) => x.toFixed(2)).join(' ')}; median ${median(ratios).toFixed(2)}`,
  );
  console.log(
    `load ${load.map((x) => x.toFixed(2)).join(' ')} → ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  for (const s of sides) s.server.close();
} finally {
  await browser.close();
}
