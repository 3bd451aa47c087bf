import { MemoryStore } from '../src/store/store.js';
import { runStoreConformance } from './store-conformance.js';

runStoreConformance('MemoryStore', async () => ({ store: new MemoryStore() }));
