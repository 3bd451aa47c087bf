/**
 * Section 4: the browser. In Debian's Chromium through Playwright: IndexedDB claim
 * latency with the browser store (`IdbStore`, strict durability), and the delay between
 * a click and its request leaving (`fetch` called) with `useIdempotentMutation`, whose
 * key is claimed on mount, and with TanStack's `useMutation` over `oncely/tanstack`
 * (key claimed on mount; lock kept or not). The page (browser-page.ts) is bundled with esbuild and served,
 * with the API it posts to, from one node:http server on 127.0.0.1.
 *
 * Chromium defers IndexedDB and Web Locks replies that follow a click until the next
 * frame is drawn (`DeferRendererTasksAfterInput`, on by default), so two baselines are
 * measured in the same run: a bare claim started in a click handler (the floor of any
 * durable write before a request) and the hook's click dispatched by script
 * (`element.click()`: no input event, no deferral; what oncely itself adds).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium } from '@playwright/test';
import { type BuildOptions, build } from 'esbuild';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../e2e/chromium.ts';
import type { Click, Variant } from './browser-page.ts';
import { fmtMs, median, quantile } from './stats.ts';

interface Timing {
  medianMs: number;
  p95Ms: number;
}

export interface ClickResult {
  n: number;
  /** Click handler start → fetch called: what the hook and the core add. */
  handlerToFetch: Timing;
  /** Click handler start → `in_flight` stored (lock, re-claim, write). */
  handlerToStored: Timing;
  /** `in_flight` stored → fetch called (ky). */
  storedToFetch: Timing;
  /** Input event created → fetch called: handlerToFetch plus the browser's dispatch. */
  eventToFetch: Timing;
  /** Click handler → the response shown (status success). */
  handlerToDone: Timing;
}

export interface BrowserResult {
  chromium: string;
  idbClaim: { n: number } & Timing;
  /** The default browser client: IndexedDB store, Web Locks across tabs. */
  click: ClickResult;
  /** The same with a LocalCoordinator: what the cross-tab lock costs. */
  clickLocalLock: ClickResult;
  /** The default client, the click dispatched by script: no input event, no deferral until the next frame. */
  clickScript: ClickResult;
  /** TanStack `useMutation` + plain fetch, real click: the floor of any React mutation. */
  clickTanstack: ClickResult;
  /** TanStack `useMutation` over `oncely/tanstack` options, key claimed on mount, no lock kept. */
  clickTanstackOncely: ClickResult;
  /** The same with `payment.hold(vars)` on mount: the lock kept, as the hook does. */
  clickTanstackOncelyHeld: ClickResult;
  /** A bare `IdbStore` claim started in a click handler (real input): the browser's floor. */
  bareClaimAfterClick: { n: number } & Timing;
  /** The same write and a Web Lock, made by a Worker the click handler messages (real input). */
  workerClaimAfterClick: { n: number; received: Timing; written: Timing } & Timing;
  /** A fresh page's first click (what a shopper gets: nothing warmed up), hook and TanStack. */
  firstClick: { n: number; hook: Timing; tanstack: Timing };
}

/** browser-page.ts bundled for Chromium; `extra` adds options (compare-clicks.ts pins oncely to a build). */
export async function bundlePage(extra: Pick<BuildOptions, 'plugins' | 'nodePaths'> = {}): Promise<string> {
  const result = await build({
    entryPoints: [path.join(import.meta.dirname, 'browser-page.ts')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    minify: true,
    ...extra,
    define: { 'process.env.NODE_ENV': JSON.stringify('production') },
    logLevel: 'warning',
  });
  return result.outputFiles[0]!.text;
}

const html =
  '<!doctype html><meta charset="utf-8"><title>oncely bench</title><div id="root"></div><script type="module" src="/page.js"></script>';
const answer = JSON.stringify({ id: 'pay_123', status: 'succeeded' });

const stat = (values: number[]): Timing => ({ medianMs: median(values), p95Ms: quantile(values, 0.95) });

function clickResult(clicks: Click[]): ClickResult {
  return {
    n: clicks.length,
    handlerToFetch: stat(clicks.map((c) => c.fetch - c.handler)),
    handlerToStored: stat(clicks.map((c) => c.stored - c.handler)),
    storedToFetch: stat(clicks.map((c) => c.fetch - c.stored)),
    eventToFetch: stat(clicks.map((c) => c.fetch - c.event)),
    handlerToDone: stat(clicks.map((c) => c.done - c.handler)),
  };
}

/** Cross-origin isolation, so that performance.now() has 5 µs resolution rather than 100 µs. */
const ISOLATED = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };

export async function measureBrowser(options: {
  claims: number;
  clicks: number;
  firstClicks: number;
}): Promise<BrowserResult> {
  const script = await bundlePage();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html', ...ISOLATED }).end(html);
      else if (req.url === '/page.js')
        res.writeHead(200, { 'content-type': 'text/javascript', ...ISOLATED }).end(script);
      else if (req.url === '/ok' && req.method === 'POST')
        res.writeHead(201, { 'content-type': 'application/json' }).end(answer);
      else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => (globalThis as { benchReady?: boolean }).benchReady === true);

    const claims = await page.evaluate(
      (n) => (globalThis as unknown as { benchIdb(n: number): Promise<number[]> }).benchIdb(n),
      options.claims,
    );

    const isolated = await page.evaluate(() => globalThis.crossOriginIsolated);
    if (!isolated) throw new Error('the bench page is not cross-origin isolated: timer resolution would be 100 µs');

    const variants = ['weblocks', 'local', 'script', 'tanstack', 'tanstack-oncely', 'tanstack-oncely-held'] as const;
    const clicks = Object.fromEntries(variants.map((v) => [v, [] as Click[]])) as Record<
      (typeof variants)[number],
      Click[]
    >;
    let bare: number[] = [];
    let inWorker: number[] = [];
    for (let i = 0; i < options.clicks + 10; i++) {
      // Alternate the variants, so that the machine's load hits them alike.
      for (const variant of variants) {
        await page.evaluate(
          (v) => (globalThis as unknown as { benchMount(v: Variant): Promise<void> }).benchMount(v),
          variant === 'script' ? 'weblocks' : variant,
        );
        if (variant === 'script') await page.evaluate(() => document.querySelector<HTMLButtonElement>('#pay')!.click());
        else await page.click('#pay');
        const click = await page.evaluate(() =>
          (globalThis as unknown as { benchLastClick(): Promise<Click> }).benchLastClick(),
        );
        if (i >= 10) clicks[variant].push(click); // the first ones warm up
      }
      await page.click('#bare');
      bare = await page.evaluate(
        (n) => (globalThis as unknown as { benchBareClaims(n: number): Promise<number[]> }).benchBareClaims(n),
        i + 1,
      );
      await page.click('#worker');
      inWorker = await page.evaluate(
        (n) => (globalThis as unknown as { benchWorkerClaims(n: number): Promise<number[]> }).benchWorkerClaims(n),
        i + 1,
      );
    }
    bare = bare.slice(10);
    inWorker = inWorker.slice(10);
    const steps = (
      await page.evaluate(() =>
        (globalThis as unknown as { benchWorkerSteps(): { received: number; written: number }[] }).benchWorkerSteps(),
      )
    ).slice(10);
    // A fresh page per click: the first click after load, as a shopper makes it.
    const first = { hook: [] as number[], tanstack: [] as number[] };
    for (let i = 0; i < options.firstClicks; i++) {
      for (const variant of ['weblocks', 'tanstack'] as const) {
        const fresh = await browser.newPage();
        fresh.on('pageerror', (error) => errors.push(error.message));
        await fresh.goto(`${origin}/`);
        await fresh.waitForFunction(() => (globalThis as { benchReady?: boolean }).benchReady === true);
        await fresh.evaluate(
          (v) => (globalThis as unknown as { benchMount(v: string): Promise<void> }).benchMount(v),
          variant,
        );
        await fresh.waitForTimeout(100); // a shopper does not click within 100 ms of the button showing
        await fresh.click('#pay');
        const click = await fresh.evaluate(() =>
          (globalThis as unknown as { benchLastClick(): Promise<Click> }).benchLastClick(),
        );
        first[variant === 'weblocks' ? 'hook' : 'tanstack'].push(click.fetch - click.handler);
        await fresh.close();
      }
    }
    if (errors.length > 0) throw new Error(`page errors: ${errors.join('; ')}`);
    return {
      firstClick: { n: first.hook.length, hook: stat(first.hook), tanstack: stat(first.tanstack) },
      chromium: browser.version(),
      idbClaim: { n: claims.length, ...stat(claims) },
      click: clickResult(clicks.weblocks),
      clickLocalLock: clickResult(clicks.local),
      clickScript: clickResult(clicks.script),
      clickTanstack: clickResult(clicks.tanstack),
      clickTanstackOncely: clickResult(clicks['tanstack-oncely']),
      clickTanstackOncelyHeld: clickResult(clicks['tanstack-oncely-held']),
      bareClaimAfterClick: { n: bare.length, ...stat(bare) },
      workerClaimAfterClick: {
        n: inWorker.length,
        ...stat(inWorker),
        received: stat(steps.map((s) => s.received)),
        written: stat(steps.map((s) => s.written)),
      },
    };
  } finally {
    await browser.close();
    server.close();
  }
}

export function browserRows(b: BrowserResult): string[][] {
  const { idbClaim, bareClaimAfterClick: floor, workerClaimAfterClick: inWorker } = b;
  const clickRow = (label: string, c: ClickResult) => [
    `${label} (${c.n} clicks)`,
    fmtMs(c.handlerToFetch.medianMs),
    `p95 ${fmtMs(c.handlerToFetch.p95Ms)}; in_flight stored at ${fmtMs(c.handlerToStored.medianMs)}, ${c.storedToFetch.medianMs >= 0 ? `then ky ${fmtMs(c.storedToFetch.medianMs)}` : 'after the request left (the lock was kept since mount)'}; from the input event ${fmtMs(c.eventToFetch.medianMs)}; response shown ${fmtMs(c.handlerToDone.medianMs)}`,
  ];
  return [
    [
      `IndexedDB claim (IdbStore, strict, ${idbClaim.n} claims)`,
      fmtMs(idbClaim.medianMs),
      `p95 ${fmtMs(idbClaim.p95Ms)}`,
    ],
    [
      `  same, started in a click handler (${floor.n} clicks): the floor`,
      fmtMs(floor.medianMs),
      `p95 ${fmtMs(floor.p95Ms)}; Chromium defers IndexedDB replies after a click until the next frame`,
    ],
    clickRow('click → request leaves, useIdempotentMutation', b.click),
    clickRow('  same, LocalCoordinator (no Web Lock)', b.clickLocalLock),
    clickRow('  same, click dispatched by script (no deferral)', b.clickScript),
    [
      `  floor: TanStack useMutation + fetch (${b.clickTanstack.n} clicks)`,
      fmtMs(b.clickTanstack.handlerToFetch.medianMs),
      `p95 ${fmtMs(b.clickTanstack.handlerToFetch.p95Ms)}; no key, no store, no lock`,
    ],
    clickRow(
      'click → request leaves, TanStack useMutation + oncely/tanstack, payment.hold(vars)',
      b.clickTanstackOncelyHeld,
    ),
    clickRow('  same, claim(vars) only (no lock kept)', b.clickTanstackOncely),
    [
      `  a strict IndexedDB write + Web Lock, in a Worker messaged from a click handler (${inWorker.n} clicks)`,
      fmtMs(inWorker.medianMs),
      `p95 ${fmtMs(inWorker.p95Ms)}; in the worker: message in at ${fmtMs(inWorker.received.medianMs)}, lock + write done at ${fmtMs(inWorker.written.medianMs)}`,
    ],
    [
      `first click on a fresh page → request leaves, useIdempotentMutation (${b.firstClick.n} pages)`,
      fmtMs(b.firstClick.hook.medianMs),
      `p95 ${fmtMs(b.firstClick.hook.p95Ms)}; 100 ms after mount, the hook's warm-up done (one call of a client of nothing)`,
    ],
    [
      `  floor: TanStack useMutation + fetch, first click on a fresh page (${b.firstClick.n} pages)`,
      fmtMs(b.firstClick.tanstack.medianMs),
      `p95 ${fmtMs(b.firstClick.tanstack.p95Ms)}`,
    ],
  ];
}
