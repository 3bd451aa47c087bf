// The client half: a Node worker that pays one order through the payments API, with
// oncely's real default store (SQLite in $ONCELY_STATE_DIR). Started by main.ts:
//
//   ONCELY_STATE_DIR=<dir> node worker.ts <api url>
//
// Its last line is the outcome as JSON, for main.ts to check.
import { createClient } from 'oncely';

const [baseUrl] = process.argv.slice(2);
if (!baseUrl) {
  console.error('usage: ONCELY_STATE_DIR=<dir> node worker.ts <api url>');
  process.exit(2);
}

// No `store`: the default Node store, durable before the first byte leaves.
const client = createClient({
  baseUrl,
  scope: 'acct_1',
  headers: { 'x-account-id': 'acct_1' },
  retry: { baseDelay: 50, maxAttempts: 4, deadline: 20_000 },
});

try {
  // Formed and sent in one step: the key is stored with the in_flight write (one flush) before
  // the first byte. The first answer is lost on the way back; the retry carries the same key.
  const res = await client.send('checkout:cart_42', 'POST', 'payments', { json: { amount: 4200 } });
  console.log(`intent checkout:cart_42: key ${res.key}`);
  console.log(`HTTP ${res.status}, replayed: ${res.replayed}, attempts: ${res.attempts}`, res.data);
  console.log(
    JSON.stringify({
      status: res.status,
      replayed: res.replayed,
      attempts: res.attempts,
      key: res.key,
      data: res.data,
    }),
  );
  await client.close();
} catch (error) {
  console.error(error);
  process.exit(1);
}
