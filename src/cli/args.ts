/** `oncely check` flags → `CheckOptions`. Bad input is an `InvalidArgumentError` (exit 2). */
import { InvalidArgumentError } from '../errors.js';
import type { CheckOptions } from './check-options.js';
import { parseHeader } from './probe.js';

export const USAGE = `Usage: oncely check <url> --json '<body>' | --form '<body>' [options]

Measures one endpoint's idempotency with a bounded sequence of real requests (fresh keys
each) and prints the oncely profile it needs. It creates real effects: use a test endpoint.

Options:
  --json <body>          a valid request body (JSON); this or --form is required; a string
                         with {{key}} gets a value unique to each key (a body per key)
  --form <body>          a valid request body as a form, e.g. 'amount=1000&currency=usd'
  --header 'Name: value' a header on every request (repeatable), e.g. Authorization
  --origin <origin>      send Origin and check the CORS preflight for it
  --profile <name>       the profile you mean to use: ietf (default), ietf-bare, ietf-bare-unmarked, stripe
  --method POST|PATCH    default POST
  --concurrency <n>      simultaneous first requests with one key (2-20, default 5)
  --rounds <n>           bursts that must overlap at the server, each with a fresh key (1-10, default 3)
  --max-rounds <n>       most bursts sent to get them (default 10)
  --slow 'Name: value'   a header that slows the server's effect, sent on the burst
  --error-json <body>    a body the server rejects (default [])
  --error-form <body>    with --form: a form the server rejects (default: an empty form)
  --max-requests <n>     refuse to send more (default 100)
  --timeout <ms>         per request (default 10000)
  --format table|json    default table
  --dry-run              list the requests, send nothing

Exit: 0 PASSED: all measured, no finding can cause a second effect; 1 FAILED: one can;
      2 bad input; 3 INCONCLUSIVE: none found, but the race or the replay was not measured.`;

export interface CliCommand {
  options: CheckOptions;
  format: 'table' | 'json';
  dryRun: boolean;
}

const parseJson = (text: string, flag: string): unknown => {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`${flag} is not valid JSON: ${(error as Error).message}`);
  }
};

const integer = (text: string, flag: string): number => {
  if (!/^\d+$/.test(text))
    throw new InvalidArgumentError(`${flag} expects a whole number, got ${JSON.stringify(text)}.`);
  return Number(text);
};

/** Parse the arguments after `oncely`. `undefined` means: print the usage (help). */
export function parseArgs(argv: readonly string[]): CliCommand | undefined {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') return undefined;
  if (command !== 'check')
    throw new InvalidArgumentError(`Unknown command ${JSON.stringify(command)}: try "oncely check".`);
  const options: Partial<CheckOptions> & { headers: [string, string][] } = { headers: [] };
  let format: 'table' | 'json' = 'table';
  let dryRun = false;
  const positional: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const [flag, inline] =
      arg.startsWith('--') && arg.includes('=')
        ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
        : [arg, undefined];
    const value = (): string => {
      const next = inline ?? rest[++i];
      if (next === undefined) throw new InvalidArgumentError(`${flag} needs a value.`);
      return next;
    };
    switch (flag) {
      case '--help':
      case '-h':
        return undefined;
      case '--json':
        options.json = parseJson(value(), '--json');
        break;
      case '--form':
        options.form = value();
        break;
      case '--error-form':
        options.errorForm = value();
        break;
      case '--rounds':
        options.rounds = integer(value(), flag);
        break;
      case '--max-rounds':
        options.maxRounds = integer(value(), flag);
        break;
      case '--error-json':
        options.errorJson = parseJson(value(), '--error-json');
        break;
      case '--header':
      case '-H':
        options.headers.push(parseHeader(value(), '--header'));
        break;
      case '--origin':
        options.origin = value();
        break;
      case '--profile':
        options.profile = value();
        break;
      case '--method':
        options.method = value().toUpperCase() as 'POST';
        break;
      case '--concurrency':
        options.concurrency = integer(value(), flag);
        break;
      case '--slow':
        options.slow = value();
        break;
      case '--max-requests':
        options.maxRequests = integer(value(), flag);
        break;
      case '--timeout':
        options.timeout = integer(value(), flag);
        break;
      case '--format': {
        const f = value();
        if (f !== 'table' && f !== 'json') throw new InvalidArgumentError(`--format must be table or json, got ${f}.`);
        format = f;
        break;
      }
      case '--dry-run':
        dryRun = true;
        break;
      default:
        if (arg.startsWith('-')) throw new InvalidArgumentError(`Unknown option ${arg}.`);
        positional.push(arg);
    }
  }
  if (positional.length !== 1)
    throw new InvalidArgumentError(
      `oncely check takes one URL, got ${positional.length === 0 ? 'none' : positional.join(' ')}.`,
    );
  if ((options.json === undefined) === (options.form === undefined))
    throw new InvalidArgumentError('One of --json and --form is required: the body of a valid request.');
  return { options: { ...options, url: positional[0]! }, format, dryRun };
}
