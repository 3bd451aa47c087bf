import { isPrintableAscii } from '../profiles/sf-string.js';
import { intentId } from './record-rules.js';
import { parseRecord } from './record-schema.js';
import type { IntentRecord, Store } from './store.js';

/**
 * An answer of a store that breaks the `Store` contract (garbage, or a well-typed lie).
 * Never leaves oncely: `storeCall` turns it into a `StoreError` that says what the call was
 * doing and whether anything was sent.
 */
export class StoreAnswerError extends Error {}

/** A short, secret-free description of a value a store answered. */
function shape(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return typeof value === 'number' ? `the number ${value}` : `a ${typeof value}`;
}

/**
 * `value` as a valid record of `scope` (and `name`), or a StoreAnswerError that says which
 * call `gave` it (`get() answered`) and what was wrong.
 */
function recordOf(gave: string, value: unknown, scope: string, name?: string): IntentRecord {
  const parsed = parseRecord(value);
  if ('reason' in parsed) {
    const object = typeof value === 'object' && value !== null && !Array.isArray(value);
    throw new StoreAnswerError(`${gave} ${object ? `an ${parsed.reason}` : `${shape(value)}, not an intent record`}`);
  }
  const { record } = parsed;
  if (record.scope !== scope || (name !== undefined && record.name !== name))
    throw new StoreAnswerError(
      `${gave} the record of intent ${intentId(record.scope, record.name)} for ${name === undefined ? `scope ${JSON.stringify(scope)}` : intentId(scope, name)}`,
    );
  return record;
}

const HEADER_VALUE = /^[\x21-\x7e\x80-\xff](?:[\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?$/;

/**
 * Why `key` cannot go on the wire as this client sends it (`encodeKey`: the profile's), or
 * `undefined`: printable ASCII with no space at either end (as `validateKey`), and a header
 * value that HTTP carries unchanged once encoded.
 */
function unsendable(key: string, encodeKey: (key: string) => string): string | undefined {
  if (!isPrintableAscii(key) || key.trim() !== key)
    return 'a key that is not printable ASCII without spaces at either end (e.g. CR, LF)';
  let encoded: unknown;
  try {
    encoded = encodeKey(key);
  } catch {
    return "a key the profile's encodeKey refuses";
  }
  return typeof encoded === 'string' && HEADER_VALUE.test(encoded)
    ? undefined
    : "a key whose header value (as the profile's encodeKey writes it) HTTP would not carry unchanged";
}

/** The fields by which the answer of a write must be the record the updater wrote. */
const differences = (stored: IntentRecord, wrote: IntentRecord): string[] =>
  [
    stored.key !== wrote.key && 'key',
    stored.state !== wrote.state && 'state',
    stored.lease?.owner !== wrote.lease?.owner && 'lease owner',
    stored.fingerprint !== wrote.fingerprint && 'fingerprint',
    stored.attempts !== wrote.attempts && 'attempts',
  ].filter((field): field is string => field !== false);

/**
 * The store as the engine uses it: every call goes to `store` with every argument it was
 * given, and every answer is checked against the `Store` contract before the engine acts on
 * it (DESIGN rule 11: a boundary may lie). A record must be valid and of the intent asked
 * for, a claimed key sendable, a list a list of the scope's records in the states asked for,
 * a sweep a count; an `update()` must have run its updater (on a valid record) and answer
 * with the record it wrote. Anything else rejects with a {@link StoreAnswerError}.
 */
export function checkedStore(store: Store, encodeKey: (key: string) => string): Store {
  return {
    async claim(...args) {
      const [fresh] = args;
      const answer: unknown = await store.claim(...args);
      const { record: value, created } = ((typeof answer === 'object' && answer) || {}) as Record<string, unknown>;
      if (typeof answer !== 'object' || answer === null || typeof created !== 'boolean')
        throw new StoreAnswerError(`claim() answered ${shape(answer)}, not { record, created }`);
      const record = recordOf('claim() answered', value, fresh.scope, fresh.name);
      const bad = unsendable(record.key, encodeKey);
      if (bad) throw new StoreAnswerError(`claim() answered a record with ${bad}`);
      return { record, created };
    },
    async get(...args) {
      const [scope, name] = args;
      const answer: unknown = await store.get(...args);
      return answer === undefined ? undefined : recordOf('get() answered', answer, scope, name);
    },
    async update(scope, name, updater, ...rest) {
      let ran = false;
      let wrote: IntentRecord | undefined;
      const answer: unknown = await store.update(
        scope,
        name,
        (current) => {
          ran = true;
          const given =
            current === undefined ? undefined : recordOf('update() passed its updater', current, scope, name);
          wrote = updater(given);
          return wrote;
        },
        ...rest,
      );
      if (!ran) throw new StoreAnswerError('update() resolved without running its updater');
      if (answer === undefined && wrote === undefined) return undefined;
      if (answer === undefined) throw new StoreAnswerError('update() answered undefined for the record it wrote');
      const stored = recordOf('update() answered', answer, scope, name);
      const differ = wrote ? differences(stored, wrote) : [];
      if (differ.length)
        throw new StoreAnswerError(`update() answered another record than the one it wrote (${differ.join(', ')})`);
      return stored;
    },
    delete: async (...args) => void (await store.delete(...args)),
    async list(...args) {
      const [scope, states] = args;
      const answer: unknown = await store.list(...args);
      if (!Array.isArray(answer)) throw new StoreAnswerError(`list() answered ${shape(answer)}, not a list`);
      return Array.from(answer, (value: unknown) => {
        const record = recordOf('list() answered', value, scope);
        if (states && !states.includes(record.state))
          throw new StoreAnswerError(
            `list() answered a record in state ${record.state}, not one of ${states.join(', ')}`,
          );
        return record;
      });
    },
    clear: async (...args) => void (await store.clear(...args)),
    async sweep(...args) {
      const answer: unknown = await store.sweep(...args);
      if (!Number.isSafeInteger(answer) || (answer as number) < 0)
        throw new StoreAnswerError(`sweep() answered ${shape(answer)}, not a count`);
      return answer as number;
    },
    ...(store.close && { close: async (...args: []) => void (await store.close!(...args)) }),
  };
}
