import type { KyInstance } from 'ky';
import type { IntentCoordinator } from '../coordinator/coordinator.js';
import type { EventHub } from '../events.js';
import type { Network } from '../http/network.js';
import type { Profile } from '../profiles/profiles.js';
import type { ResolvedRetryOptions } from '../retry/policy.js';
import type { QueuedWrites } from '../store/queued-writes.js';
import type { Store } from '../store/store.js';
import type { KeyKind } from './keys.js';

/** What an intent shares with the client that made it. */
export interface ClientContext {
  scope: string;
  store: Store;
  profile: Profile;
  hub: EventHub;
  coordinator: IntentCoordinator;
  retry: ResolvedRetryOptions;
  keyTtl: number;
  keys: KeyKind;
  /** ky with the app's ky options, loaded on first use; `undefined` without them (attempts go to `fetch`). */
  ky: (() => Promise<KyInstance>) | undefined;
  /** The client's headers, called per call (e.g. a fresh Authorization). */
  headers: (() => HeadersInit) | undefined;
  fetch: typeof globalThis.fetch;
  /** `fetch` is the platform's, not the app's: only its refusals prove nothing left. */
  ownFetch: boolean;
  /** The client's `baseUrl`, ending in `/`. */
  baseUrl: string;
  /** Wall clock (ms since epoch): record times, leases, expiry. */
  now: () => number;
  /** Monotonic clock (ms): deadlines. */
  monotonic: () => number;
  random: () => number;
  /** Longest wait for one store call (ms). */
  storeTimeout: number;
  /** How long a call's lease on an in-flight intent lasts unless renewed (ms). */
  leaseTtl: number;
  /** Outcome writes queued and not landed yet, shared by the clients of this store and coordinator. */
  writes: QueuedWrites;
  /** Calls in flight in this client, per intent: a second identical call joins the first. */
  inflight: Map<string, { fingerprint: string; promise: Promise<unknown> }>;
  /** The platform's view of the network, where it has one (browsers): no attempt leaves while offline. */
  network: Network | undefined;
  /** Send small bodies with `keepalive` (browsers: a request sent outlives the page). */
  keepalive: boolean;
  /** Longest wait for the network per call (ms), within the deadline. */
  offlineWait: number;
  /** Compiles the request path once per page, off the network (`intent.hold()` starts it). */
  warmUp: () => void;
}
