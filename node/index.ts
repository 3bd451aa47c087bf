/** `oncely/node`: Node-only pieces: the contract server over node:http. */
export { type ListeningContractServer, type ListenOptions, listenContractServer } from './mock-server.js';
