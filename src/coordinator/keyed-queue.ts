/** Runs tasks one after another per id; tasks of different ids run concurrently. */
export class KeyedQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` after every earlier task of the same `id` has settled. */
  async run<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(id) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.#tails.set(id, tail);
    try {
      return await run;
    } finally {
      if (this.#tails.get(id) === tail) this.#tails.delete(id);
    }
  }
}
