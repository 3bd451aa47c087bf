/** How a check report reads: a table of findings, the profile as code, the plan for --dry-run. */
import type { ProfileChanges } from '../profiles/variants.js';
import type { CheckReport, Verdict } from './check.js';
import type { PlanStep } from './check-plan.js';
import type { Severity } from './findings.js';

const LABEL: Record<Severity, string> = { pass: 'PASS', info: 'INFO', warn: 'WARN', fail: 'FAIL', unmeasured: '????' };

/** The exported names of the profiles `--profile` accepts. */
const IDENTIFIER: Record<string, string> = {
  ietf: 'ietf',
  stripe: 'stripe',
  'ietf-bare': 'ietfBare',
  'ietf-bare-unmarked': 'ietfBareUnmarked',
};

export function effectsWarning(url: string, requests: number, effects: number): string {
  return `oncely check sends up to ${requests} real requests to ${url}; up to ${effects} of them can create a resource (a charge, an order). Point it at a test endpoint.`;
}

/**
 * The suggested profile as TypeScript to paste. Unless the verdict is `passed` (`failed`
 * true: any other), the code never says "no changes needed": no profile fixes a second
 * effect, and what was not measured is not known to be fine.
 */
export function profileCode(
  base: string,
  changes: ProfileChanges,
  url: string,
  verdict: boolean | Verdict = 'passed',
): string {
  const outcome: Verdict = verdict === true ? 'failed' : verdict === false ? 'passed' : verdict;
  const failed = outcome !== 'passed';
  const id = IDENTIFIER[base] ?? 'base';
  const from = id === 'base' ? '// `base` is the profile you passed to runCheck.' : '';
  const lines: string[] = [];
  if (changes.keyEncoding === 'bare')
    lines.push('  encodeKey: (key) => key, // the server reads the key verbatim: send it bare');
  if (changes.keyEncoding === 'sf-string') lines.push('  encodeKey: ietf.encodeKey, // the server wants a quoted key');
  const replay = changes.replay;
  if (replay === 'none') lines.push('  replayHeaders: [], // replays carry no marker');
  else if (typeof replay === 'string') lines.push(`  replayHeaders: [${JSON.stringify(replay)}],`);
  else if (replay) {
    lines.push('  replayHeaders: [],');
    lines.push(
      `  isReplay: ({ headers }) => headers.get(${JSON.stringify(replay.header)})?.trim().toLowerCase() === ${JSON.stringify(replay.value.trim().toLowerCase())},`,
    );
  }
  const cases = [
    ...(changes.mismatchStatuses ?? []).map((status) => `answer.status === ${status} ? 'mismatch'`),
    ...(changes.inProgressStatuses ?? []).map((status) => `answer.status === ${status} ? 'in_progress'`),
  ];
  if (cases.length > 0) lines.push(`  classify: (answer) => (${cases.join(' : ')} : ${id}.classify(answer)),`);
  const imports = new Set([id === 'base' ? undefined : id, changes.keyEncoding === 'sf-string' ? 'ietf' : undefined]);
  const names = [...imports].filter((name): name is string => name !== undefined).join(', ');
  const head = [
    "import type { Profile } from 'oncely';",
    ...(names ? [`import { ${names} } from 'oncely/profiles';`] : []),
    ...(from ? [from] : []),
    '',
    `// Measured by \`oncely check\` on ${url}.`,
    ...(outcome === 'failed'
      ? ['// The wire format only: no profile prevents the second effect the check found. Fix the server.']
      : outcome === 'inconclusive'
        ? ['// The wire format only: the race or the replay was not measured, so a second effect is not ruled out.']
        : []),
  ];
  if (lines.length === 0)
    return [...head, `export const serverProfile: Profile = ${id};${failed ? '' : ' // no changes needed'}`].join('\n');
  return [
    ...head,
    `export const serverProfile: Profile = {`,
    `  ...${id},`,
    `  name: '${(changes.name ?? 'checked').replace(/['\\]/g, '\\$&')}',`,
    ...lines,
    '};',
  ].join('\n');
}

const wrap = (text: string, indent: string, width = 100): string[] => {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + word.length + 1 > width) {
      out.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(indent + line);
  return out;
};

/** The readable report: one row per finding, evidence and notes under the ones that are not a pass. */
export function formatReport(report: CheckReport): string {
  const width = Math.max(...report.findings.map((f) => f.id.length), 'finding'.length);
  const indent = ' '.repeat(6 + width + 2);
  const rows = [`${'      '}${'finding'.padEnd(width)}  measured`];
  for (const f of report.findings) {
    rows.push(`${LABEL[f.severity]}  ${f.id.padEnd(width)}  ${f.result}`);
    if (f.severity === 'pass') continue;
    for (const item of f.evidence ?? []) rows.push(...wrap(`· ${item}`, indent));
    rows.push(...wrap(`oncely: ${f.oncely}`, indent));
    if (f.cannot) rows.push(...wrap(`cannot: ${f.cannot}`, indent));
    if (f.remedy) rows.push(...wrap(`to measure: ${f.remedy}`, indent));
  }
  const ids = (severity: Severity) => report.findings.filter((f) => f.severity === severity).map((f) => f.id);
  const unmeasured = report.findings.filter((f) => f.severity === 'unmeasured');
  // The verdict comes first, so a profile below a failure never reads as a clean bill.
  const verdict =
    report.verdict === 'failed'
      ? [`FAILED: ${ids('fail').join(', ')} — a retry can cause a second effect (exit 1).`]
      : report.verdict === 'inconclusive'
        ? [
            `INCONCLUSIVE: ${unmeasured.map((f) => f.id).join(', ')} not measured — no second effect was found, but the check could not see whether one can happen (exit 3).`,
            ...unmeasured.flatMap((f) => (f.remedy ? wrap(`to measure ${f.id}: ${f.remedy}`, '  ') : [])),
          ]
        : ['PASSED: no finding can cause a second effect with the profile below (exit 0).'];
  const out = [
    `oncely check  ${report.method} ${report.url}  (${report.requests.length} requests sent)`,
    '',
    ...verdict,
    '',
    ...rows,
  ];
  if (report.suggestion) {
    const { base, changes } = report.suggestion;
    out.push('', 'Profile to use:', '', profileCode(base, changes, report.url, report.verdict));
  }
  return out.join('\n');
}

/** What --dry-run prints: the steps, the request counts, no request sent. */
export function formatPlan(url: string, method: string, plan: readonly PlanStep[]): string {
  const width = Math.max(...plan.map((step) => step.id.length));
  const rows = plan.map(
    (step) =>
      `  ${step.id.padEnd(width)}  ${String(step.requests).padStart(2)} × ${step.effects === 0 ? 'OPTIONS' : method}  ${step.what}`,
  );
  return [`oncely check --dry-run: would send to ${url}`, '', ...rows].join('\n');
}
