/**
 * Keeping credentials out of logs. An idempotency key can replay a charge, so a header set
 * an error carries is a redacted copy, and an error's `util.inspect` (what `console.error`
 * prints) has the key and every credential header masked, causes included.
 */

export const REDACTED = '[redacted]';

/** Header names whose values are credentials wherever they appear (the key header by its usual names). */
const SECRET_NAMES = /^(authorization|proxy-authorization|cookie|set-cookie|idempotency-key|x-idempotency-key)$/i;

/** A copy of `headers` with every credential header, and every value holding `key`, masked. */
export function redactHeaders(headers: Headers, key: string | undefined): Headers {
  const copy = new Headers();
  headers.forEach((value, name) => {
    copy.append(name, SECRET_NAMES.test(name) || (key && key.length >= 4 && value.includes(key)) ? REDACTED : value);
  });
  return copy;
}

/** A quoted value after a credential header's name, as `util.inspect` prints headers and plain objects. */
const SECRET_ENTRY =
  /((?:authorization|proxy-authorization|cookie|set-cookie|idempotency-key|x-idempotency-key)['"]?\s*:\s*)('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\\n]|\\.)*`)/gi;

/** `text` with every occurrence of `key` and every credential header's value masked. */
export function redactText(text: string, key: string | undefined): string {
  const masked = text.replace(SECRET_ENTRY, `$1'${REDACTED}'`);
  return key && key.length >= 4 ? masked.split(key).join(REDACTED) : masked;
}
