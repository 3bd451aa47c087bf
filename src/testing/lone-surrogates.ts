import { equal, rejects } from './assert.js';
import type { ConformanceCase } from './cases-records.js';
import { intentRecord } from './harness.js';

/**
 * For stores that keep names as UTF-8, where two names with different lone surrogates would
 * be one row: every method refuses them; a well-formed pair is kept.
 */
export const loneSurrogateCase: ConformanceCase = {
  group: 'names',
  name: 'a scope or name with a lone surrogate is refused by every method; a well-formed pair is kept',
  async run(h) {
    const { store } = await h.fresh();
    const refused = (promise: Promise<unknown>, what: string) => rejects(promise, 'INVALID_ARGUMENT', what);
    for (const bad of ['\ud800', 'a\udc00b', '\udbff']) {
      await refused(store.claim(intentRecord('u1', bad)), 'claim() of a name with a lone surrogate');
      await refused(store.claim(intentRecord(bad, 'n')), 'claim() under a scope with a lone surrogate');
      await refused(store.get('u1', bad), 'get()');
      await refused(
        store.update('u1', bad, () => intentRecord('u1', bad)),
        'update()',
      );
      await refused(store.delete('u1', bad), 'delete()');
      await refused(store.list(bad), 'list()');
      await refused(store.clear(bad), 'clear()');
      await refused(store.sweep(bad, Date.now()), 'sweep()');
    }
    await store.claim(intentRecord('u1', 'card \ud83d\udcb3'));
    equal(
      (await store.list('u1')).map((record) => record.name),
      ['card \ud83d\udcb3'],
      'the names listed after claiming a well-formed pair',
    );
  },
};
