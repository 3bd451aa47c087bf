/** Every relative link in README.md, CONTRIBUTING.md and docs/*.md points at a file in the repository (and a heading there). */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = path.resolve(import.meta.dirname, '..');
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(path.join(repo, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
const anchors = (file: string) =>
  new Set(
    readFileSync(file, 'utf8')
      .replace(/```[\s\S]*?```/g, '')
      .split('\n')
      .filter((line) => /^#{1,6} /.test(line))
      .map((line) => anchor(line.replace(/^#+ /, ''))),
  );

describe('documentation links', () => {
  for (const page of pages) {
    it(`${page}: every relative link resolves`, () => {
      const text = readFileSync(path.join(repo, page), 'utf8').replace(/```[\s\S]*?```/g, '');
      const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/i.test(l));
      const broken = links.filter((link) => {
        const [target = '', hash] = link.split('#');
        const file = target === '' ? path.join(repo, page) : path.resolve(path.dirname(path.join(repo, page)), target);
        if (!file.startsWith(repo) || !existsSync(file)) return true;
        return hash !== undefined && statSync(file).isFile() && file.endsWith('.md') && !anchors(file).has(hash);
      });
      expect(broken, `${page} links to what is not in the repository`).toEqual([]);
    });
  }
});
