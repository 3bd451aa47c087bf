import { StoreError } from '../src/errors.js';
import { checkStorable } from '../src/store/record-rules.js';
import type {
  ClaimResult,
  DeleteOptions,
  IntentRecord,
  IntentState,
  RecordUpdater,
  Store,
  SweepOptions,
} from '../src/store/store.js';
import type { Row, StoreRequest } from './protocol.js';

/** The part of a Durable Object namespace binding (`env.INTENTS`) the store uses. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(input: string, init?: RequestInit): Promise<Response> };
}

export interface DurableObjectStoreOptions {
  /**
   * Put before each scope to name its object, so that two apps (or two stores) on one
   * namespace keep apart.
   * @default 'oncely:'
   */
  prefix?: string;
}

/**
 * oncely's store on Cloudflare Workers: intents in SQLite-backed Durable Objects (one
 * object per scope, bound as `IntentStoreObject`), strongly consistent and transactional,
 * so a claim is a constraint across every isolate and data centre. Workers KV is eventually
 * consistent and cannot hold a claim. `createClient({ store: new DurableObjectStore(env.INTENTS), … })`.
 */
export class DurableObjectStore implements Store {
  readonly #namespace: DurableObjectNamespaceLike;
  readonly #prefix: string;

  constructor(namespace: DurableObjectNamespaceLike, options: DurableObjectStoreOptions = {}) {
    this.#namespace = namespace;
    this.#prefix = options.prefix ?? 'oncely:';
  }

  async #ask<T>(scope: string, request: StoreRequest): Promise<T> {
    const stub = this.#namespace.get(this.#namespace.idFromName(this.#prefix + scope));
    const response = await stub.fetch('https://intent-store.oncely/', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const answer = (await response.json().catch(() => undefined)) as { result?: T; error?: string } | undefined;
    if (
      !response.ok ||
      typeof answer !== 'object' ||
      answer === null ||
      answer.error !== undefined ||
      !('result' in answer)
    )
      throw new StoreError(
        `The intent store's Durable Object did not do ${request.op}: ${answer?.error ?? `HTTP ${response.status}`}`,
        { scope },
      );
    return answer.result as T;
  }

  async claim(fresh: IntentRecord): Promise<ClaimResult> {
    checkStorable(fresh.scope, fresh.name);
    return this.#ask(fresh.scope, { op: 'claim', fresh });
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    checkStorable(scope, name);
    const { text } = await this.#ask<Row>(scope, { op: 'read', name });
    return text === null ? undefined : (JSON.parse(text) as IntentRecord);
  }

  /** The updater runs here over the row as read; the object writes only if the row is still that text, else it runs again. */
  async update(scope: string, name: string, updater: RecordUpdater): Promise<IntentRecord | undefined> {
    checkStorable(scope, name);
    let { text } = await this.#ask<Row>(scope, { op: 'read', name });
    for (;;) {
      const current = text === null ? undefined : (JSON.parse(text) as IntentRecord);
      const next = updater(current);
      if (next === undefined) return current;
      const answer = await this.#ask<{ written: boolean; text?: string | null }>(scope, {
        op: 'write',
        name,
        expected: text,
        next,
      });
      if (answer.written) return JSON.parse(JSON.stringify(next)) as IntentRecord;
      text = answer.text ?? null;
    }
  }

  async delete(scope: string, name: string, key?: string, options: DeleteOptions = {}): Promise<void> {
    checkStorable(scope, name);
    await this.#ask(scope, { op: 'delete', name, key, keepPending: options.keepPending });
  }

  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    checkStorable(scope);
    return this.#ask(scope, { op: 'list', states });
  }

  async clear(scope: string, options: DeleteOptions = {}): Promise<void> {
    checkStorable(scope);
    await this.#ask(scope, { op: 'clear', keepPending: options.keepPending });
  }

  async sweep(scope: string, now: number, options: SweepOptions = {}): Promise<number> {
    checkStorable(scope);
    return this.#ask(scope, { op: 'sweep', now, limit: options.limit });
  }
}
