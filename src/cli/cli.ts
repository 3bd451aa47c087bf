/** `oncely <command>` as a function: arguments in, exit code out, output through `io`. */
import { OncelyError } from '../errors.js';
import { parseArgs, USAGE } from './args.js';
import { planFor, runCheck } from './check.js';
import { effectsWarning, formatPlan, formatReport, profileCode } from './report.js';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

/** Exit codes: the verdict's, and 2 for bad input. */
export const EXIT = { passed: 0, failed: 1, badInput: 2, inconclusive: 3 } as const;

/**
 * Runs the CLI. Resolves with the exit code: 0 passed, 1 a finding can cause a second
 * effect, 2 bad input, 3 inconclusive (the race or the replay was not measured).
 */
export async function cli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const command = parseArgs(argv);
    if (!command) {
      io.out(USAGE);
      return 0;
    }
    const { options, format, dryRun } = command;
    const { plan, requests, effects } = planFor(options);
    io.err(`warning: ${effectsWarning(options.url, requests, effects)}`);
    if (dryRun) {
      io.out(formatPlan(options.url, options.method ?? 'POST', plan));
      return 0;
    }
    const report = await runCheck(options);
    if (format === 'json') {
      const { suggestion, ...rest } = report;
      const code = suggestion && profileCode(suggestion.base, suggestion.changes, report.url, report.verdict);
      io.out(
        JSON.stringify({ ...rest, suggestion: suggestion && { ...suggestion, profile: undefined, code } }, null, 2),
      );
    } else io.out(formatReport(report));
    return EXIT[report.verdict];
  } catch (error) {
    if (error instanceof OncelyError && error.code === 'INVALID_ARGUMENT') {
      io.err(`oncely: ${error.message}\n\n${USAGE}`);
      return EXIT.badInput;
    }
    throw error;
  }
}
