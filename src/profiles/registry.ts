import { ietf } from './profiles.js';
import { stripe } from './stripe.js';
import { ietfBare, ietfBareUnmarked } from './variants.js';

/** The built-in profiles by name (what `oncely check --profile` accepts). */
export const profiles = { ietf, stripe, 'ietf-bare': ietfBare, 'ietf-bare-unmarked': ietfBareUnmarked } as const;
export type ProfileName = keyof typeof profiles;
