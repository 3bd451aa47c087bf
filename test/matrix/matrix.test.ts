/**
 * The fault matrix (issue 17). `npm test` runs a sample covering every point and fault;
 * `ONCELY_MATRIX=full` (set by `npm run chaos`) runs every generated case.
 */
import { expect, test } from 'vitest';
import { CASES, fastSubset } from './cases.js';
import { type CaseResult, runCase } from './invariants.js';

const full = process.env.ONCELY_MATRIX === 'full';
const only = process.env.ONCELY_MATRIX_ONLY; // a substring of case ids, to rerun a few
const selected = (full ? CASES : fastSubset()).filter((c) => !only || c.id.includes(only));
const CONCURRENCY = 4;

const count = (f: (c: (typeof CASES)[number]) => string) => new Set(CASES.map(f)).size;

test(`fault matrix: ${selected.length} of ${CASES.length} cases`, { timeout: 60 * 60 * 1000 }, async () => {
  const t0 = performance.now();
  const results: CaseResult[] = [];
  const queue = [...selected];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let c = queue.shift(); c; c = queue.shift()) results.push(await runCase(c));
    }),
  );
  const failing = results.filter((r) => r.broken.length > 0).sort((a, b) => a.id.localeCompare(b.id));
  const lines = [
    `fault matrix: ${count((c) => c.point)} points, ${count((c) => `${c.point}/${c.fault}`)} point×fault pairs, ${count((c) => c.moment)} kinds of moment → ${CASES.length} cases; ran ${selected.length} in ${Math.round((performance.now() - t0) / 1000)} s; ${failing.length} fail`,
    ...failing.map(
      (r) =>
        `  FAIL ${r.id} → ${r.outcome} [${r.ms} ms]: ${r.broken.map((b) => `inv${b.invariant} ${b.what}`).join('; ')}`,
    ),
  ];
  if (process.env.ONCELY_MATRIX_VERBOSE)
    for (const r of results) lines.push(`  ${r.broken.length ? 'FAIL' : 'ok  '} ${r.id} → ${r.outcome} [${r.ms} ms]`);
  const unreached = results.filter((r) => r.unreached).map((r) => r.id);
  if (unreached.length)
    lines.push(`  ${unreached.length} store faults never fired (call not reached): ${unreached.join(', ')}`);
  console.log(lines.join('\n'));
  expect(failing.map((r) => r.id)).toEqual([]);
});
