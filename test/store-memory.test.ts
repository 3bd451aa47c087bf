import { MemoryStore } from '../src/store.js';
import { runStoreConformance } from './store-conformance.js';

runStoreConformance('MemoryStore', async () => ({ store: new MemoryStore() }));
