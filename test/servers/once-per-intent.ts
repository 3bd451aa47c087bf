/**
 * What every check test ends with: oncely (createClient + MemoryStore + intent.post) with
 * the suggested profile, against the same server, loses the first answer of each intent
 * and must still make exactly one effect per intent.
 */
import { createClient, MemoryStore, type Profile } from '../../src/index.js';

export interface OncePerIntentInput {
  /** Base URL the client talks to (the server, or a dropping proxy in front of it). */
  baseUrl: string;
  profile: Profile;
  body: unknown;
  /** Arms the next dropped answer (proxy, or the server's own fault hook). */
  dropNext(): void | Promise<void>;
  effects(): number;
  /** @default 2 */
  intents?: number;
}

export async function oncePerIntent(input: OncePerIntentInput) {
  const client = createClient({
    baseUrl: `${input.baseUrl}/`,
    store: new MemoryStore(),
    profile: input.profile,
    retry: { baseDelay: 1, maxDelay: 5 },
    random: () => 0.5,
  });
  const before = input.effects();
  const statuses: number[] = [];
  const attempts: number[] = [];
  try {
    for (let i = 0; i < (input.intents ?? 2); i++) {
      await input.dropNext();
      const intent = await client.intent(`checkout:${i}`);
      const res = await intent.post('payments', { json: input.body });
      statuses.push(res.status);
      attempts.push(res.attempts);
    }
  } finally {
    await client.close();
  }
  return { effects: input.effects() - before, statuses, attempts };
}

/** The findings of a report as `{ id: severity }`, for one readable assertion. */
export const severities = (findings: readonly { id: string; severity: string }[]) =>
  Object.fromEntries(findings.map((f) => [f.id, f.severity]));
