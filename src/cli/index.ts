/**
 * `oncely/check`: the conformance check of a live server as functions, for CI. It sends
 * real requests with plain fetch; the profiles it suggests are in the main entry.
 */
export { type CheckReport, type CheckRequest, planFor, runCheck, type Verdict } from './check.js';
export type { CheckOptions } from './check-options.js';
export type { PlanStep, StepId } from './check-plan.js';
export { type CliIo, cli } from './cli.js';
export { type Finding, type FindingId, NOTES, type Severity } from './findings.js';
export type { RacePower } from './judge.js';
export { formatPlan, formatReport, profileCode } from './report.js';
