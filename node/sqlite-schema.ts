/**
 * The database file of `SqliteStore`: what it holds, how it is recognised at open, how
 * it is migrated. A file that is not SQLite, or a SQLite file of another program or of
 * a newer oncely, is reported (`StoreFileError`), never replaced.
 */
import { OncelyError, StoreError } from '../src/errors.js';
import { type Db, SQLITE_CORRUPT, SQLITE_NOTADB, sqliteCode } from './sqlite-driver.js';

/** `PRAGMA application_id` of oncely's database files ('onc1'). */
export const APPLICATION_ID = 0x6f6e6331;

/**
 * One entry per schema version: `MIGRATIONS[i]` takes a file from `user_version` i to
 * i + 1. Append only; never edit a shipped entry.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE intents (
     scope TEXT NOT NULL,
     name TEXT NOT NULL,
     -- the record's state, or 'blocked' for a quarantine marker
     state TEXT NOT NULL,
     -- updatedAt + ttl: past it a settled or never-sent record may be swept
     sweep_at INTEGER NOT NULL,
     -- the IntentRecord (or quarantine marker) as JSON
     record TEXT NOT NULL,
     PRIMARY KEY (scope, name)
   ) WITHOUT ROWID;
   CREATE INDEX intents_by_state ON intents (scope, state, sweep_at);
   CREATE TABLE quarantine (
     id INTEGER PRIMARY KEY,
     scope TEXT,
     name TEXT,
     reason TEXT NOT NULL,
     at INTEGER NOT NULL,
     salvaged_key TEXT,
     value TEXT NOT NULL
   );
   CREATE INDEX quarantine_by_scope ON quarantine (scope);
   -- FileStore slots (sha256 of [scope, name]) whose file named no intent: blocked until deleted
   CREATE TABLE legacy_blocked (id TEXT PRIMARY KEY, reason TEXT NOT NULL, location TEXT NOT NULL) WITHOUT ROWID;
   CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export type StoreFileProblem = 'not-a-database' | 'corrupt' | 'foreign' | 'newer-schema';

/**
 * The database file cannot be used as it is: not SQLite, damaged, another program's, or
 * written by a newer oncely. Nothing was changed in it. Move it aside (keep it: it may
 * hold keys already sent) and reconcile, or point the store at another file.
 */
export class StoreFileError extends StoreError {
  readonly file: string;
  readonly problem: StoreFileProblem;
  constructor(file: string, problem: StoreFileProblem, detail: string, cause?: unknown) {
    super(`oncely's database ${file} cannot be used: ${detail}. It was left untouched.`, { cause });
    this.file = file;
    this.problem = problem;
  }
}

const pragma = (db: Db, name: string): number => Number(Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0]);

/**
 * Checks what the file is and, with `migrate`, brings its schema up to date (inside
 * `BEGIN IMMEDIATE`: migrations of two processes must not interleave). Throws
 * `StoreFileError`. True when the schema is (now) up to date.
 */
export function checkAndMigrate(db: Db, file: string, migrate = true): boolean {
  let applicationId: number;
  let version: number;
  let objects: number;
  try {
    applicationId = pragma(db, 'application_id');
    version = pragma(db, 'user_version');
    objects = Number(db.prepare('SELECT count(*) AS n FROM sqlite_schema').get()?.n);
  } catch (error) {
    throw fileError(file, error) ?? error;
  }
  if (applicationId === 0 && objects > 0) {
    throw new StoreFileError(file, 'foreign', 'it is a SQLite database of another program');
  }
  if (applicationId !== 0 && applicationId !== APPLICATION_ID) {
    throw new StoreFileError(
      file,
      'foreign',
      `it is a SQLite database of another program (application_id ${applicationId})`,
    );
  }
  if (version > SCHEMA_VERSION) {
    throw new StoreFileError(
      file,
      'newer-schema',
      `its schema version ${version} is newer than this oncely's ${SCHEMA_VERSION}`,
    );
  }
  if (!migrate) return version === SCHEMA_VERSION;
  for (let v = version; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]!);
  if (version < SCHEMA_VERSION) {
    db.exec(`PRAGMA application_id = ${APPLICATION_ID}; PRAGMA user_version = ${SCHEMA_VERSION}`);
  }
  return true;
}

/** The `StoreFileError` an error of SQLite means, if it says the file is bad. */
export function fileError(file: string, error: unknown): StoreFileError | undefined {
  const code = sqliteCode(error);
  if (code === SQLITE_NOTADB) return new StoreFileError(file, 'not-a-database', 'it is not a SQLite database', error);
  if (code === SQLITE_CORRUPT) return new StoreFileError(file, 'corrupt', 'the database file is damaged', error);
  return undefined;
}

/** What a caller gets for an error met on `file`: a bad file's StoreFileError, a StoreError for SQLite's and the file system's, oncely's own as is. */
export function storeError(file: string, error: unknown): unknown {
  if (error instanceof OncelyError) return error;
  const bad = fileError(file, error);
  if (bad) return bad;
  const code = (error as { code?: unknown } | null)?.code;
  if (
    sqliteCode(error) !== undefined ||
    (typeof code === 'string' && (code.startsWith('ERR_SQLITE') || code.startsWith('E')))
  ) {
    const message = error instanceof Error ? error.message : String(error);
    return new StoreError(`oncely's database ${file} failed: ${message}`, { cause: error });
  }
  return error;
}
