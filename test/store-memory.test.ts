import { MemoryStore } from '../src/store/memory-store.js';
import { runStoreConformance } from './store-conformance.js';

runStoreConformance('MemoryStore', async () => ({ store: new MemoryStore() }));
