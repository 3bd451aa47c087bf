#!/usr/bin/env node
/** The `oncely` bin (`npx oncely check …`). Node only; the library entries never import it. */
import { cli } from './cli.js';

process.exitCode = await cli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
});
