/**
 * `oncely/node`: everything in `oncely`, with a `createClient` that defaults to the file
 * store, plus the file store itself and the contract server over node:http.
 */
export * from './default.js';
export { FileStore, type FileStoreOptions, openFileStore, type QuarantinedFile } from './file-store.js';
export { type ListeningContractServer, type ListenOptions, listenContractServer } from './mock-server.js';
export { defaultStateDir } from './state-dir.js';
