/**
 * Imports the directory of `FileStore` (oncely 0.1's store for Node) into SQLite, so
 * that no key stored there is lost. The old layout is `scopes/<sha256 [scope]>/<sha256
 * [scope, name]>.jsonl`; each file holds JSON lines `{"id":"<sha256 [scope, name]>",
 * ...value}` (one per intent: claims committed together shared a file, hard-linked under
 * each name), the value being a record or a quarantine marker.
 *
 * Runs once per directory, inside the store's opening transaction (other processes wait
 * for it); `scopes/` is then renamed `filestore-imported/`, kept as it was.
 */
import { existsSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { isQuarantineMarker, readSlot } from '../src/store/corrupt-records.js';
import { parseRecord } from '../src/store/record-schema.js';
import type { IntentRecord } from '../src/store/store.js';
import type { Db } from './sqlite-driver.js';
import { type IntentRows, rowValue } from './sqlite-rows.js';

/**
 * Hex SHA-256 of `[scope, name]`: how FileStore named an intent's file, and its line id.
 * `node:crypto` is loaded on first use: its load was 15–20 ms of every database thread's
 * start, and only a directory to import or a blocked legacy slot needs it.
 */
export const legacyId = (scope: string, name: string): string =>
  (process.getBuiltinModule('node:crypto') as typeof import('node:crypto'))
    .createHash('sha256')
    .update(JSON.stringify([scope, name]))
    .digest('hex');

const RECORD_FILE = /^([0-9a-f]{64})\.jsonl$/;
const LINE_ID = /^\{"id":"([0-9a-f]{64})"/;

/** The value stored for `id` in a file's text: its own line, else the whole text (parsed if JSON). */
function valueFor(text: string, id: string): unknown {
  const line = text.split('\n').find((candidate) => LINE_ID.exec(candidate)?.[1] === id);
  let value: unknown;
  try {
    value = JSON.parse(line ?? text);
  } catch {
    return line ?? text;
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'id' in value) {
    const { id: lineId, ...rest } = value as Record<string, unknown>;
    return lineId === id ? rest : value;
  }
  return value;
}

/** The intent a value says it is, if that is the intent its file was named for. */
function identify(value: unknown, id: string): { scope: string; name: string } | undefined {
  const claimed = (typeof value === 'object' && value !== null ? value : {}) as { scope?: unknown; name?: unknown };
  if (typeof claimed.scope !== 'string' || typeof claimed.name !== 'string') return undefined;
  return legacyId(claimed.scope, claimed.name) === id ? { scope: claimed.scope, name: claimed.name } : undefined;
}

function unidentifiedReason(value: unknown): string {
  if (typeof value === 'string') return value.trim() === '' ? 'empty record file' : 'record file is not JSON';
  const parsed = parseRecord(value);
  return 'reason' in parsed ? parsed.reason : 'record of another intent';
}

export interface ImportReport {
  imported: number;
  /** Bad files met: kept in quarantine, their intents salvaged or blocked. */
  quarantined: { scope?: string; name?: string; reason: string; location: string; salvaged: boolean }[];
}

const IMPORTED_DIR = 'filestore-imported';

/** True when `dir` holds a FileStore directory not yet imported. Cheap: one `stat`. */
export const hasFileStore = (dir: string): boolean => existsSync(path.join(dir, 'scopes'));

/**
 * Imports `dir/scopes` into the store's tables; run inside `BEGIN IMMEDIATE`. A record
 * already in SQLite is kept (the file's copy, if different, goes to quarantine). Files
 * that cannot be read are quarantined with FileStore's rules: a readable key is kept as
 * `unknown`, otherwise the intent is blocked (`legacy_blocked` when the file does not
 * even say which intent it is). Returns `undefined` when another process imported it.
 */
export function importFileStore(db: Db, rows: IntentRows, dir: string, now: number): ImportReport | undefined {
  if (db.prepare("SELECT 1 FROM meta WHERE key = 'filestore_imported'").get()) return undefined;
  const report: ImportReport = { imported: 0, quarantined: [] };
  const blockLegacy = db.prepare('INSERT OR REPLACE INTO legacy_blocked (id, reason, location) VALUES (?, ?, ?)');
  const scopes = path.join(dir, 'scopes');
  for (const sid of readdirSync(scopes)) {
    let names: string[];
    try {
      names = readdirSync(path.join(scopes, sid));
    } catch {
      continue;
    }
    for (const fileName of names) {
      const id = RECORD_FILE.exec(fileName)?.[1];
      if (id === undefined) continue;
      const decoded = readFileSync(path.join(scopes, sid, fileName), 'utf8');
      const value = valueFor(decoded, id);
      const intent = identify(value, id);
      if (!intent) {
        if (isQuarantineMarker(value)) {
          blockLegacy.run(id, value.reason, value.location);
          continue;
        }
        const reason = `FileStore file: ${unidentifiedReason(value)}`;
        const location = rows.quarantine({ reason, at: now, value: decoded });
        blockLegacy.run(id, reason, location);
        report.quarantined.push({ reason, location, salvaged: false });
        continue;
      }
      const { scope, name } = intent;
      const slot = readSlot(value, scope, name, now);
      if (slot.kind === 'empty') continue;
      if (slot.kind === 'blocked') {
        if (!rows.read(scope, name)) rows.put(scope, name, rowValue(slot.marker));
        continue;
      }
      const record: IntentRecord | undefined = slot.kind === 'record' ? slot.record : slot.salvaged;
      if (slot.kind === 'corrupt') {
        const reason = `FileStore file: ${slot.reason}`;
        const location = rows.quarantine({ scope, name, reason, at: now, salvagedKey: record?.key, value: decoded });
        report.quarantined.push({ scope, name, reason, location, salvaged: record !== undefined });
        if (!record && !rows.read(scope, name)) {
          rows.put(scope, name, rowValue({ oncely: 'quarantined', reason, location, at: now }));
        }
      }
      if (record && rows.insert(scope, name, rowValue(record))) report.imported++;
      else if (record && rows.read(scope, name)?.text !== JSON.stringify(record)) {
        // SQLite already had this intent (written after an earlier import): keep both.
        rows.quarantine({
          scope,
          name,
          reason: 'FileStore copy of an intent already in SQLite',
          at: now,
          value: decoded,
        });
      }
    }
  }
  db.prepare("INSERT INTO meta (key, value) VALUES ('filestore_imported', ?)").run(String(now));
  return report;
}

/** Moves the imported `scopes/` out of the way (after the import committed), kept as it was. */
export function retireFileStore(dir: string, now: number): void {
  const from = path.join(dir, 'scopes');
  if (!existsSync(from)) return;
  const target = existsSync(path.join(dir, IMPORTED_DIR)) ? `${IMPORTED_DIR}-${now}` : IMPORTED_DIR;
  try {
    renameSync(from, path.join(dir, target));
  } catch {
    // Another process moved it first.
  }
}
