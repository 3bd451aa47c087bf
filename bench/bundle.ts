/**
 * What a page pays for oncely: scripts/bundle-budget.js's bundles (the checkout, everything)
 * with each part's share from esbuild's metafile, and the React example's production build
 * (e2e/app/, as e2e/app/build.ts bundles it: minified, react and react-dom included) with
 * oncely and with every `oncely` import replaced by an empty stub: the difference is what
 * the example app pays for oncely, its dependencies included.
 */
import { gzipSync } from 'node:zlib';
import { build, type Plugin } from 'esbuild';
import { APP_DIR } from '../e2e/app/build.ts';
// @ts-expect-error: a plain JS script (npm test runs it), no declarations
import { measure as measureBudget } from '../scripts/bundle-budget.js';

interface Gzipped {
  bytes: number;
  gzip: number;
}
interface Share {
  name: string;
  bytes: number;
  share: number;
}
/** scripts/bundle-budget.js's report (`--json`). */
export interface BudgetReport {
  budget: { checkout: { total: number; own: number }; everything: { total: number } };
  target: { checkout: { total: number; own: number }; everything: { total: number } };
  checkout: {
    total: Gzipped;
    own: Gzipped;
    origins: Share[];
    parts: Share[];
    ownFiles: { file: string; bytes: number }[];
  };
  everything: { total: Gzipped; own: Gzipped; origins: Share[]; parts: Share[] };
  createClientOnly: Gzipped & { origins: string[] };
  failures: string[];
}
const measure = measureBudget as () => Promise<BudgetReport>;

export interface AppBuild {
  /** gzip -9 bytes of the production bundle. */
  withOncely: number;
  withoutOncely: number;
  /** Minified bytes of oncely's own code and of its dependencies in the bundle (metafile). */
  ownBytes: number;
  dependencyBytes: number;
  totalBytes: number;
}

export interface BundleResult {
  budget: BudgetReport;
  app: AppBuild;
}

const ONCELY_DEPENDENCIES = ['ky', 'p-retry', 'idb-keyval', 'is-network-error'];

/** Every `oncely` import becomes a module exporting the same names, all undefined. */
const stubOncely: Plugin = {
  name: 'stub-oncely',
  setup(b) {
    b.onResolve({ filter: /^oncely(\/.*)?$/ }, (args) => ({ path: args.path, namespace: 'oncely-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'oncely-stub' }, async (args) => {
      const names = Object.keys(await import(args.path)).filter((name) => name !== 'default');
      return { contents: names.map((name) => `export const ${name} = undefined;`).join('\n'), loader: 'js' };
    });
  },
};

async function buildApp(stub: boolean) {
  const result = await build({
    entryPoints: [`${APP_DIR}/main.tsx`],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    jsx: 'automatic',
    minify: true,
    metafile: true,
    define: { 'process.env.NODE_ENV': JSON.stringify('production') },
    plugins: stub ? [stubOncely] : [],
    logLevel: 'silent',
  });
  const output = result.outputFiles[0]!;
  const inputs = Object.entries(Object.values(result.metafile.outputs)[0]!.inputs);
  const bytesOf = (test: (file: string) => boolean) =>
    inputs.filter(([file]) => test(file)).reduce((sum, [, info]) => sum + info.bytesInOutput, 0);
  return {
    gzip: gzipSync(output.contents, { level: 9 }).length,
    total: output.contents.length,
    own: bytesOf((file) => /(^|\/)dist\/(src|browser)\//.test(file)),
    dependencies: bytesOf((file) => ONCELY_DEPENDENCIES.some((d) => file.includes(`node_modules/${d}/`))),
  };
}

export async function measureBundle(): Promise<BundleResult> {
  const budget = await measure();
  const [withOncely, without] = [await buildApp(false), await buildApp(true)];
  return {
    budget,
    app: {
      withOncely: withOncely.gzip,
      withoutOncely: without.gzip,
      ownBytes: withOncely.own,
      dependencyBytes: withOncely.dependencies,
      totalBytes: withOncely.total,
    },
  };
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** [measure, figure, detail] rows: the three bundles, each part's share of the checkout, the example app. */
export function bundleRows({ budget, app }: BundleResult): [string, string, string][] {
  const { checkout, everything } = budget;
  const rows: [string, string, string][] = [
    [
      'checkout: useIdempotentMutation + createClient (oncely/browser), gzip',
      kb(checkout.total.gzip),
      `esbuild, minified, ESM, browser; react external; npm test's guard ${kb(budget.budget.checkout.total)}`,
    ],
    [
      "checkout: oncely's own code, gzip",
      kb(checkout.own.gzip),
      `the same with every dependency external; npm test's guard ${kb(budget.budget.checkout.own)}`,
    ],
    [
      'everything: export * of oncely/browser and oncely/react, gzip',
      kb(everything.total.gzip),
      `npm test's guard ${kb(budget.budget.everything.total)}`,
    ],
  ];
  for (const { name, bytes, share } of checkout.parts)
    rows.push([`checkout part: ${name}`, `${(share * 100).toFixed(1)} %`, `${kb(bytes)} minified (metafile)`]);
  rows.push([
    'React example (e2e/app) production build, gzip',
    `${kb(app.withOncely)} / ${kb(app.withoutOncely)}`,
    `with oncely / with every oncely import stubbed out: oncely costs ${kb(app.withOncely - app.withoutOncely)} gzip (${kb(app.ownBytes)} own + ${kb(app.dependencyBytes)} dependencies minified of ${kb(app.totalBytes)})`,
  ]);
  return rows;
}
