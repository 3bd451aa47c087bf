import { parseRecord } from './record-schema.js';
import type { IntentRecord, Store } from './store.js';

/**
 * An answer of a store that breaks the `Store` contract (garbage, or a well-typed lie).
 * Never leaves oncely: `storeCall` turns it into a `StoreError` that says what the call was
 * doing and whether anything was sent.
 */
export class StoreAnswerError extends Error {}

const fail = (text: string): never => {
  throw new StoreAnswerError(text);
};

/** What a value a store answered is, in a word (never its content). */
const shape = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value);

/** `value` as a valid record of `scope` (and `name`), or a StoreAnswerError: what `gave` it (`get() answered`) and what was wrong. */
function recordOf(gave: string, value: unknown, scope: string, name?: string): IntentRecord {
  const parsed = parseRecord(value);
  if ('reason' in parsed) return fail(`${gave} ${shape(value) === 'object' ? `an ${parsed.reason}` : shape(value)}`);
  const { record } = parsed;
  if (record.scope !== scope || (name !== undefined && record.name !== name))
    fail(`${gave} the record of another intent or scope`);
  return record;
}

/** Printable ASCII with no space at either end (as `validateKey`): what a header carries unchanged. */
const SENDABLE = /^[!-~](?:[ -~]*[!-~])?$/;

/** True when `key`, and the header value the profile makes of it, go on the wire unchanged (no CR, LF…). */
function sendable(key: string, encodeKey: (key: string) => string): boolean {
  try {
    return SENDABLE.test(key) && SENDABLE.test(encodeKey(key));
  } catch {
    return false;
  }
}

/** True when `stored` is the record the updater wrote, by the fields that matter. */
const same = (stored: IntentRecord, wrote: IntentRecord) =>
  stored.key === wrote.key &&
  stored.state === wrote.state &&
  stored.lease?.owner === wrote.lease?.owner &&
  stored.fingerprint === wrote.fingerprint &&
  stored.attempts === wrote.attempts;

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
      const answer = (await store.claim(...args)) as { record?: unknown; created?: unknown } | undefined;
      if (typeof answer?.created !== 'boolean') fail(`claim() answered ${shape(answer)}, not { record, created }`);
      const record = recordOf('claim() answered', answer!.record, args[0].scope, args[0].name);
      if (!sendable(record.key, encodeKey)) fail('claim() answered a key that HTTP cannot carry as it is (CR, LF…)');
      return { record, created: answer!.created as boolean };
    },
    async get(...args) {
      const answer: unknown = await store.get(...args);
      return answer === undefined ? undefined : recordOf('get() answered', answer, ...args);
    },
    async update(scope, name, updater, ...rest) {
      let ran = false;
      let wrote: IntentRecord | undefined;
      const answer: unknown = await store.update(
        scope,
        name,
        (current) => {
          ran = true;
          wrote = updater(current && recordOf('update() passed its updater', current, scope, name));
          return wrote;
        },
        ...rest,
      );
      if (!ran) fail('update() resolved without running its updater');
      if (answer === undefined && !wrote) return undefined;
      const stored = recordOf('update() answered', answer, scope, name);
      if (wrote && !same(stored, wrote)) fail('update() answered another record than it wrote');
      return stored;
    },
    delete: async (...args) => void (await store.delete(...args)),
    async list(...args) {
      const answer: unknown = await store.list(...args);
      if (!Array.isArray(answer)) fail(`list() answered ${shape(answer)}`);
      return Array.from(answer as unknown[], (value) => {
        const record = recordOf('list() answered', value, args[0]);
        if (args[1] && !args[1].includes(record.state)) fail('list() answered a record in a state not asked for');
        return record;
      });
    },
    clear: async (...args) => void (await store.clear(...args)),
    async sweep(...args) {
      const answer: unknown = await store.sweep(...args);
      return Number.isSafeInteger(answer) && (answer as number) >= 0
        ? (answer as number)
        : fail(`sweep() answered ${shape(answer)}, not a count`);
    },
    ...(store.close && { close: async (...args: []) => void (await store.close!(...args)) }),
  };
}
