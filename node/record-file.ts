/**
 * The on-disk format of `FileStore` records.
 *
 * Every intent has one file, `<scope id>/<record id>.jsonl`, named by hashes so that any
 * scope and intent name (slashes, `..`, unicode, 10 kB) makes a safe, fixed-length name.
 * The file holds JSON lines, each `{"id":"<record id>", ...value}` where the value is an
 * `IntentRecord` or a quarantine marker. Usually there is one line. Claims committed
 * together share one flushed file, hard-linked under each of their names (one flush for
 * the batch), so a file may hold the lines of other intents of the same scope: a reader
 * takes the line with its own id. Files are never modified in place, only replaced.
 */
import { createHash } from 'node:crypto';
import { parseRecord } from '../src/store/record-schema.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Hex SHA-256 of `[scope]`: the name of the scope's directory. */
export const scopeId = (scope: string): string => sha256(JSON.stringify([scope]));

/** Hex SHA-256 of `[scope, name]`: the name (without extension) of the intent's file. */
export const recordId = (scope: string, name: string): string => sha256(JSON.stringify([scope, name]));

/** Names of record files in a scope directory. */
export const RECORD_FILE = /^([0-9a-f]{64})\.jsonl$/;

export const recordFileName = (id: string): string => `${id}.jsonl`;

/** One line of a record file. `value` must be a plain JSON object without an `id`. */
export const encodeLine = (id: string, value: object): string => JSON.stringify({ id, ...value });

const LINE_ID = /^\{"id":"([0-9a-f]{64})"/;

/** The lines of a record file by the id they start with. */
export function indexLines(text: string): Map<string, string> {
  const lines = new Map<string, string>();
  for (const line of text.split('\n')) {
    const id = LINE_ID.exec(line)?.[1];
    if (id !== undefined && !lines.has(id)) lines.set(id, line);
  }
  return lines;
}

/**
 * The value stored for `id` in a record file's text, as close to what was written as
 * can be told: the parsed line without its `id`; the raw line if it does not parse;
 * for a file without a line of this id (written by hand, truncated, foreign), the whole
 * text parsed as JSON, else the text itself. The caller validates it.
 */
export function valueFor(text: string, id: string, lines = indexLines(text)): unknown {
  const line = lines.get(id);
  const raw = line ?? text;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return raw;
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'id' in value) {
    const { id: lineId, ...rest } = value as Record<string, unknown>;
    // A line of another id is not this intent's value; keep the id so that it shows.
    return lineId === id ? rest : value;
  }
  return value;
}

/**
 * The intent a stored value says it is, if that is the intent its file is for
 * (and, when `scope` is given, of that scope).
 */
export function identify(value: unknown, id: string, scope?: string): { scope: string; name: string } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const claimed = value as { scope?: unknown; name?: unknown };
  if (typeof claimed.scope !== 'string' || typeof claimed.name !== 'string') return undefined;
  if (scope !== undefined && claimed.scope !== scope) return undefined;
  return recordId(claimed.scope, claimed.name) === id ? { scope: claimed.scope, name: claimed.name } : undefined;
}

/** Why a file whose text is not JSON is bad. */
export const unreadableReason = (text: string): string =>
  text.trim() === '' ? 'empty record file' : 'record file is not JSON (truncated or foreign)';

/** Why a value that does not say which intent it is (see {@link identify}) is bad. */
export function unidentifiedReason(value: unknown): string {
  if (typeof value === 'string') return unreadableReason(value);
  const parsed = parseRecord(value);
  return 'reason' in parsed ? parsed.reason : 'record of another intent';
}
