/**
 * `oncely/profiles`: how servers speak idempotency, as values imported where used
 * (`createClient({ profile: stripe })`). `ietf` is the default; a page that never imports
 * the others does not carry them.
 */
export { ietf, type Outcome, type Profile } from './profiles.js';
export { type ProfileName, profiles } from './registry.js';
export { stripe } from './stripe.js';
export { ietfBare, ietfBareUnmarked, type ProfileChanges, profileVariant } from './variants.js';
