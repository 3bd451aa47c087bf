/**
 * Runs one case and checks the eight invariants of issue 17 on what it left: the ledger's
 * requests and effects, the error, the time taken, the store's record, and a resume.
 */
import { isOncelyError } from '../../src/index.js';
import type { Case } from './cases.js';
import { BUDGET, type Env, makeEnv } from './env.js';

/** How far past its deadline a call may settle. */
export const BOUND = 2000;
/** Past this a call is taken as hung: the case fails instead of the run. */
const HARD = BUDGET.deadline + BOUND + 2500;
const RESUME = { ...BUDGET, deadline: 6000, maxAttempts: 8, timeout: 1000 };

export interface Broken {
  invariant: number;
  what: string;
}
export interface CaseResult {
  id: string;
  broken: Broken[];
  outcome: string;
  ms: number;
  /** The planned store fault never fired: the flow did not reach that call (reported, not failed). */
  unreached?: boolean;
}

const HUNG = Symbol('hung');
const guard = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<typeof HUNG>((r) => setTimeout(() => r(HUNG), ms).unref())]);
const describe = (e: unknown) =>
  isOncelyError(e)
    ? `${e.code}(sent:${String((e as { sent?: boolean }).sent)})`
    : `raw ${typeof e === 'object' && e ? (e as Error).name : typeof e}: ${String((e as Error)?.message ?? e).slice(0, 60)}`;

export async function runCase(c: Case): Promise<CaseResult> {
  const env = await makeEnv(c.id.replace(/\W+/g, '-'));
  const broken: Broken[] = [];
  const fail = (invariant: number, what: string) => broken.push({ invariant, what });
  const t0 = performance.now();
  let outcome = 'resolved';
  let error: unknown;
  try {
    const settled = await guard(
      c.act(env).then(
        () => 'ok' as const,
        (e: unknown) => ({ e }),
      ),
      HARD,
    );
    const ms = performance.now() - t0;
    if (settled === HUNG) {
      outcome = 'hung';
      fail(5, `call never settled (> ${HARD} ms)`);
    } else if (settled !== 'ok') {
      error = settled.e;
      outcome = describe(error);
    }
    if (settled !== HUNG && ms > BUDGET.deadline + BOUND) fail(5, `settled after ${Math.round(ms)} ms`);
    const during = env.ledger.requests.slice(env.before).filter((r) => r.order === env.order || r.order === undefined);
    env.lifted = true;
    const planned = env.store.fault;
    const unreached = planned !== undefined && (env.store.calls.get(planned.op) ?? 0) < planned.nth;
    env.store.lift();
    env.ledger.lift();
    checkCall(env, error, during.length, fail);
    await checkAfter(c, env, error, fail);
    for (const e of env.sideErrors) if (!isOncelyError(e)) fail(3, `another writer got ${describe(e)}`);
    for (const f of env.findings) fail(0, f);
    return { id: c.id, broken, outcome, ms: Math.round(performance.now() - t0), unreached };
  } finally {
    for (const close of env.closers.reverse()) await guard(Promise.resolve().then(close), 500).catch(() => {});
  }
}

/** 2, 3, 4: the key, the error's type, and its `sent`. */
function checkCall(env: Env, error: unknown, received: number, fail: (i: number, w: string) => void) {
  const keys = new Set(env.ledger.requests.filter((r) => r.order === env.order && r.key).map((r) => r.key));
  if (keys.size > 1) fail(2, `${keys.size} keys on the wire for one intent`);
  if (error === undefined) return;
  if (!isOncelyError(error)) return fail(3, `rejected with ${describe(error)}`);
  const sent = (error as { sent?: boolean }).sent;
  const mayHave = received > 0 || env.mayHaveSent;
  if (mayHave && sent !== true)
    fail(
      4,
      `${error.code} has sent:${String(sent)} though ${received ? `the ledger got ${received} request(s)` : 'the transport was entered'}`,
    );
  if (sent === false && received > 0) fail(4, `${error.code} says sent:false, ledger got ${received}`);
}

/** 1, 6, 7, 8: after the faults are lifted, the record and a resume. */
async function checkAfter(c: Case, env: Env, error: unknown, fail: (i: number, w: string) => void) {
  const { ledger, store, order } = env;
  const sentKey = ledger.requests.find((r) => r.order === order && r.key)?.key;
  const record = await store.get('default', order);
  const raw = (k: string | undefined) => k?.replace(/^"|"$/g, '');
  if (sentKey && !c.forgets) {
    if (!record) fail(6, 'record of a sent intent is gone');
    else if (record.key !== raw(sentKey)) fail(6, `record has another key than the one sent`);
    else if (record.state === 'ready') fail(6, 'sent intent is back to ready');
  }
  if (record?.state === 'failed' && !ledger.requests.some((r) => r.status && r.status >= 400 && r.status < 500))
    fail(7, `failed though the server never answered 4xx (${describe(error)})`);
  for (const [i, r] of store.history.entries())
    if (r.state === 'succeeded' && store.history.slice(i + 1).some((n) => n.key === r.key && n.state !== 'succeeded'))
      fail(7, 'a succeeded intent became something else');
  if (c.forgets) return void (ledger.effectsOf(order) > 1 && !c.forgets && fail(1, 'second effect'));
  // 8: resume under the same name, faults lifted.
  const client = env.client({ retry: RESUME, storeTimeout: 3000 });
  try {
    if (sentKey) {
      const intent = await guard(env.intent(client), 3000);
      if (intent !== HUNG && intent.key !== raw(sentKey))
        fail(6, 'a fresh client.intent() returns another key than the one sent');
    }
    const resumed = await guard((c.resume ?? ((e, cl) => e.post(cl)))(env, client), RESUME.deadline + BOUND);
    if (resumed === HUNG) fail(8, 'resume never settled');
  } catch (e) {
    const code = isOncelyError(e) ? e.code : undefined;
    if (code !== 'INTENT_EXPIRED') fail(8, `resume rejected with ${describe(e)}`);
    else return;
  } finally {
    await guard(client.close(), 500).catch(() => {});
  }
  const effects = ledger.effectsOf(order);
  if (effects > 1) fail(1, `${effects} effects at the ledger for one intent`);
  else if (effects === 0) fail(8, 'no effect after resume');
}
