// One life of a transfer worker. Started by main.ts (twice: the first one is SIGKILLed):
//
//   ONCELY_STATE_DIR=<dir> node worker.ts <jobs.json> <api url>
//
// On start it resumes what a previous life left: `client.pending()` lists the intents
// whose outcome is not known (`in_flight`, `unknown`) — names and keys, no bodies — and
// each is re-issued with its request rebuilt from the app's own job rows. Then it works
// through the jobs not done yet, three at a time.
import { readFileSync } from 'node:fs';
import { createClient } from 'oncely';

interface TransferJob {
  id: string;
  to: string;
  amount: number;
}

const [jobsFile, baseUrl] = process.argv.slice(2);
if (!jobsFile || !baseUrl) {
  console.error('usage: ONCELY_STATE_DIR=<dir> node worker.ts <jobs.json> <api url>');
  process.exit(2);
}
// The app's own table of jobs: oncely stores keys and states, never request bodies.
const jobs = JSON.parse(readFileSync(jobsFile, 'utf8')) as TransferJob[];
const jobOf = new Map(jobs.map((job) => [`transfer:${job.id}`, job]));

// The default Node store (keys in $ONCELY_STATE_DIR), shared by every life of the worker.
const client = createClient({
  baseUrl,
  scope: 'acct_ops',
  // A killed worker's call stays `in_flight` under its lease; another process may take the
  // intent over only once the lease runs out. The live owner renews it every third of
  // leaseTtl, so a short lease costs a few writes and lets a restart resume in ~2 s
  // instead of the default 15 s. Keep it well above a store write's worst latency.
  leaseTtl: 2_000,
  retry: { maxAttempts: 6, timeout: 5_000, deadline: 20_000 },
});

const say = (line: string) => console.log(line);

const bodyOf = (job: TransferJob) => ({ job: job.id, to: job.to, amount: job.amount });

/** Resumes a transfer a dead life left pending: the same request under its stored key. */
async function resume(job: TransferJob): Promise<void> {
  const intent = await client.intent(`transfer:${job.id}`);
  say(`send ${intent.name} (${intent.state}) with key ${intent.key}`);
  const res = await intent.post('transfers', { json: bodyOf(job) });
  say(`done ${intent.name}: ${res.status}${res.replayed ? ' replayed' : ''} ${JSON.stringify(res.data)}`);
}

/** A new transfer: formed and sent in one step (the key is stored with the in_flight write, one flush). */
async function transfer(job: TransferJob): Promise<void> {
  say(`send transfer:${job.id} (new)`);
  const res = await client.send(`transfer:${job.id}`, 'POST', 'transfers', { json: bodyOf(job) });
  say(
    `done transfer:${job.id}: ${res.status}${res.replayed ? ' replayed' : ''} with key ${res.key} ${JSON.stringify(res.data)}`,
  );
}

try {
  const pending = await client.pending();
  say(`pending after start: ${pending.length ? pending.map((p) => `${p.name} (${p.state})`).join(', ') : 'none'}`);
  // Resume first, each from the app's row for it (a row missing would be reconciled by hand).
  await Promise.all(
    pending.map((p) => {
      const job = jobOf.get(p.name);
      if (!job) throw new Error(`no job row for ${p.name}: reconcile it by its key`);
      return resume(job);
    }),
  );
  const resumed = new Set(pending.map((p) => p.name));
  const fresh = jobs.filter((job) => !resumed.has(`transfer:${job.id}`));
  for (let i = 0; i < fresh.length; i += 3) await Promise.all(fresh.slice(i, i + 3).map(transfer));
  say('all jobs done');
  await client.close();
} catch (error) {
  console.error(error);
  process.exit(1);
}
