import { InvalidArgumentError } from '../errors.js';
import { ietf, type Profile, stripe } from './profiles.js';
import { ietfBare, ietfBareUnmarked } from './variants.js';

export const profiles = { ietf, stripe, 'ietf-bare': ietfBare, 'ietf-bare-unmarked': ietfBareUnmarked } as const;
export type ProfileName = keyof typeof profiles;

export function resolveProfile(profile: ProfileName | Profile | undefined): Profile {
  if (profile === undefined) return ietf;
  if (typeof profile === 'string') {
    const found = Object.hasOwn(profiles, profile) ? profiles[profile as ProfileName] : undefined;
    if (!found)
      throw new InvalidArgumentError(
        `Unknown profile "${profile}". Use one of: ${Object.keys(profiles).join(', ')}, or pass a Profile object.`,
      );
    return found;
  }
  const p = profile as Partial<Profile> | null;
  if (!p || typeof p.header !== 'string' || typeof p.encodeKey !== 'function' || typeof p.classify !== 'function')
    throw new InvalidArgumentError(
      'A profile must be a name ("ietf", "stripe") or an object with header, encodeKey and classify, e.g. { ...ietf, header: "X-Idempotency-Key" }.',
    );
  return profile;
}
