/**
 * The invariants of the server fault matrix, checked on every case: after the case, and
 * again after a final retry of every key it used (as a client would retry: with its first
 * body, again after each 409).
 *
 * 1. The app never crashed (no uncaught exception, no unhandled rejection) and still serves.
 * 2. Every answer is 2xx, 400, 409, 413 or 422 — or what the case allows (a 500 for a
 *    handler that threw, no answer for a killed server); 400/413/422 are problem+json, a
 *    409 has Retry-After.
 * 3. A 2xx is for work that committed: the key has its row, and the answer is its stored
 *    answer byte for byte (the first one and every `Idempotent-Replayed: true` one).
 * 4. Effects (ledger rows) = committed keys, per key: 0 or 1 each, never two.
 * 5. The final retry: the replay (if the key committed) or its first run, then a replay
 *    byte for byte; afterwards every key has exactly one effect and one key row — except a
 *    key whose every request was refused as bad input (400, 413): refused again, no effect.
 */
import type { Answer, AppProcess, Database, Post } from './env.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const OK = new Set([400, 409, 413, 422]);

export interface Recorded {
  answers: Answer[];
  /** The index in `answers` from which a key's answers are after its aging (older ones are of a forgotten key). */
  agedAt: Map<string, number>;
  /** The body each key was first sent with (in the order sent, not answered): its final retry sends it again. */
  firstSent: Map<string, string>;
  apps: AppProcess[];
}

export async function checkInvariants(
  recorded: Recorded,
  alsoAllowed: number[],
  /** A 400 from Node's HTTP parser (a header it refuses) never reaches the app: no problem+json. */
  parserRejects: boolean,
  db: Database,
  app: AppProcess,
  post: (key: string, options?: Post) => Promise<Answer>,
): Promise<string[]> {
  const broken: string[] = [];
  const refusedKeys = new Set<string>();
  const crashes = () => {
    for (const one of recorded.apps)
      if (/CRASH|Unhandled|unhandledRejection/.test(one.stderr))
        broken.push(`inv1 the app crashed: ${one.stderr.slice(0, 500)}`);
    if (!app.alive) broken.push(`inv1 the app is dead: ${app.stderr.slice(0, 500)}`);
  };
  crashes();
  const keys = [...new Set(recorded.answers.map((a) => a.key).filter((k): k is string => k !== undefined))];
  const perAnswer = async (answers: Answer[], from: number) => {
    for (const [i, a] of answers.entries()) {
      const where = `answer ${from + i} (${a.key ?? 'no key'}: ${a.status}${a.error ? ` ${a.error}` : ''})`;
      const success = a.status >= 200 && a.status < 300;
      if (!success && !OK.has(a.status) && !alsoAllowed.includes(a.status))
        broken.push(`inv2 ${where}: status not allowed`);
      const parser = parserRejects && a.status === 400 && a.headers['content-type'] === undefined;
      if (
        [400, 413, 422].includes(a.status) &&
        !parser &&
        !String(a.headers['content-type']).startsWith('application/problem+json')
      )
        broken.push(`inv2 ${where}: not problem+json (${a.headers['content-type']})`);
      if (a.status === 409 && a.headers['retry-after'] === undefined)
        broken.push(`inv2 ${where}: 409 without Retry-After`);
      if (success && a.key !== undefined && from + i >= (recorded.agedAt.get(a.key) ?? 0)) {
        const stored = await db.committedBody(a.key);
        if (!stored) broken.push(`inv3 ${where}: a 2xx for a key that did not commit`);
        else if (!stored.equals(a.body)) broken.push(`inv3 ${where}: not the stored answer byte for byte`);
      }
    }
  };
  const effects = async (final: boolean) => {
    for (const key of keys) {
      const [effects, rows] = [await db.effects(key), await db.keyRows(key)];
      const expected = refusedKeys.has(key) ? 0 : 1;
      if (effects !== rows || effects > 1 || (final && effects !== expected))
        broken.push(`inv${final ? 5 : 4} ${key}: ${effects} effects, ${rows} committed key rows`);
    }
  };
  await perAnswer(recorded.answers, 0);
  await effects(false);
  // The final retry of every key, with its first body, as a client would.
  const finals: Answer[] = [];
  for (const key of keys) {
    const sent = recorded.firstSent.get(key) ?? recorded.answers.find((a) => a.key === key)!.sent;
    const first = { sent };
    const committed = await db.committedBody(key);
    const deadline = Date.now() + 12_000;
    let answer = await post(key, { body: first.sent });
    while (answer.status === 409 && Date.now() < deadline) {
      await sleep(250);
      answer = await post(key, { body: first.sent });
    }
    finals.push(answer);
    // Bad input stays bad: the same refusal again, and nothing ran.
    const refused = recorded.answers.filter((a) => a.key === key).map((a) => a.status);
    if ((answer.status === 400 || answer.status === 413) && refused.every((s) => s === answer.status)) {
      refusedKeys.add(key);
      continue;
    }
    const replayed = answer.headers['idempotent-replayed'] === 'true';
    if (answer.status !== 201 || replayed !== (committed !== undefined))
      broken.push(
        `inv5 ${key}: the final retry got ${answer.status}${replayed ? ' (replayed)' : ''}, key ${committed ? '' : 'not '}committed before`,
      );
    const again = await post(key, { body: first.sent });
    finals.push(again);
    if (again.headers['idempotent-replayed'] !== 'true' || !again.body.equals(answer.body))
      broken.push(`inv5 ${key}: the retry after the final one is not its replay byte for byte (${again.status})`);
  }
  await perAnswer(finals, recorded.answers.length);
  await effects(true);
  crashes();
  return broken;
}
