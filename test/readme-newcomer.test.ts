/**
 * What a newcomer reads first stays short and says what surprised one (issue 29 §6): the
 * README fits in 350 lines, and a restarted worker's silent wait for a dead process's
 * lease is documented where one looks (the README's `leaseTtl` row, the events' page).
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

it('README.md is at most 350 lines', () => {
  expect(read('README.md').split('\n').length - 1).toBeLessThanOrEqual(350);
});

it("a restarted worker's wait for a dead process's lease is documented with the event that reports it", () => {
  const leaseRow = read('README.md')
    .split('\n')
    .find((line) => line.startsWith('| `leaseTtl`'));
  expect(leaseRow).toMatch(/restarted/);
  expect(leaseRow).toMatch(/`lease_wait`/);
  expect(read('docs/observability.md')).toMatch(/restarted over the same store[\s\S]*waits it\s+out \(`leaseTtl`/);
});
