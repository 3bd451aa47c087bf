/**
 * Chromium's rule for `keepalive` (measured in Chromium 156): a keepalive fetch is refused —
 * a TypeError, nothing sent — when its body's UTF-8 bytes plus those of the page's keepalive
 * requests still in flight (until their response is read) pass 64 KiB. oncely keeps its own
 * keepalive bodies in flight in a page to half of that, leaving the rest to the page's beacons.
 */
export const KEEPALIVE_BUDGET = 32 * 1024;

/** Bytes of oncely's keepalive bodies in flight in this page (module-wide, as Chromium's count is). */
let inFlight = 0;

/** The UTF-8 length of `text` (lone surrogates sent as U+FFFD), exact up to `max`; a longer text is not counted. */
export function utf8Length(text: string, max: number): number {
  const units = text.length;
  if (units > max) return units;
  // Counted from the code units, without encoding: a click's request leaves sooner.
  let bytes = units;
  for (let i = 0; i < units; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    if (unit < 0x800) bytes += 1;
    else {
      bytes += 2; // 3 bytes, or a surrogate pair's 4 over its 2 units
      const next = text.charCodeAt(i + 1);
      if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return bytes;
}

/** Takes `bytes` of the budget for one attempt; returns its release, or `undefined` when it does not fit. */
export function reserveKeepalive(bytes: number): (() => void) | undefined {
  if (inFlight + bytes > KEEPALIVE_BUDGET) return undefined;
  inFlight += bytes;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    inFlight -= bytes;
  };
}
