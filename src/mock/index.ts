/**
 * `oncely/mock`: a stateful idempotency contract server for tests, over the Fetch API
 * (no peer dependency). Adapters: `mswHandlers` from `oncely/mock/msw` (needs `msw`) and
 * `listenContractServer` from `oncely/node` (node:http).
 */

export { parseSfString, serializeSfString } from '../profiles/sf-string.js';
export { type ContractServer, createContractServer } from './contract-server.js';
export type { CorsOptions } from './cors.js';
export type {
  DelayFault,
  DropAfterCommitFault,
  FailBeforeCommitFault,
  Fault,
  FaultMatch,
  FaultSpec,
  HangFault,
  InProgressFault,
  RespondFault,
  StatusFault,
} from './faults.js';
export type { RecordState } from './key-store.js';
export type { RequestLogEntry } from './ledger.js';
export type { ContractServerOptions, KeyFormat } from './options.js';
export { PROBLEM_TYPES, type Problem } from './problem.js';
export type { RouteContext, RouteHandler, RouteResult, Routes } from './routes.js';
