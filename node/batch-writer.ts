/**
 * Group commit for the files of one directory. Writes submitted while a commit is on
 * disk wait and go together in the next one: their lines are written to one temp file
 * flushed once (`fdatasync`), hard-linked (claim) or renamed (replace) under each
 * record's name, then the directory is flushed once. Every promise resolves only after
 * that directory flush, so "resolved" still means "durable"; a lone write costs two
 * flushes, a batch of 64 costs the same two.
 */
import { link, unlink } from 'node:fs/promises';
import path from 'node:path';
import {
  ensureDir,
  errorCode,
  identityAt,
  readAndFlush,
  removeQuietly,
  renameReplacing,
  syncDir,
  writeNewFile,
} from './fs-durable.js';
import { tempName } from './temp-files.js';

export type WriteOp =
  /** Create `file` with `line` unless it exists (exclusive: one racer wins). */
  | { kind: 'create'; file: string; line: string }
  /** Replace `file` (or create it) with `line`, atomically. */
  | { kind: 'replace'; file: string; line: string }
  /**
   * Remove `file` if it exists. With `ifIdentity`, only if the file there still has that
   * `fileIdentity` (fs-durable.ts), checked right before the `unlink`: another process
   * replacing the file between those two system calls is not detected. The outcome's
   * `created` says whether this op removed the file.
   */
  | { kind: 'remove'; file: string; ifIdentity?: string }
  /** Make an existing `file` (maybe written by another process) and its entry durable. */
  | { kind: 'flush'; file: string };

/**
 * For `create`: whether this write made the file, else the text of the one that was there.
 * For `remove`: whether this write removed the file.
 */
export type WriteOutcome = { created: true } | { created: false; existing: string | undefined };

interface Pending {
  op: WriteOp;
  retries: number;
  resolve: (outcome: WriteOutcome) => void;
  reject: (error: unknown) => void;
}

export interface BatchWriterOptions {
  /** The directory the files are in. Created when missing. */
  dir: string;
  /** Where temp files go: same file system as `dir`. */
  tempDir: string;
  /** Flush data and directory before resolving. */
  sync: boolean;
  /** Most writes in one commit. */
  maxBatch: number;
  /** Most bytes of lines in one commit (at least one write goes regardless). */
  maxBytes: number;
  /**
   * Commits on disk at once. A second commit writes and flushes its temp file while the
   * first waits for its directory flush; every write still waits for its own commit.
   */
  maxInFlight: number;
}

/** How often a write is retried when its directory or temp file vanished under it. */
const MAX_RETRIES = 5;

export class BatchWriter {
  readonly #options: BatchWriterOptions;
  #queue: Pending[] = [];
  #inFlight = 0;
  #idleWaiters: (() => void)[] = [];
  #dirReady = false;

  constructor(options: BatchWriterOptions) {
    this.#options = options;
  }

  submit(op: WriteOp): Promise<WriteOutcome> {
    return new Promise<WriteOutcome>((resolve, reject) => {
      this.#queue.push({ op, retries: 0, resolve, reject });
      this.#pump();
    });
  }

  /** Resolves when every write submitted so far has settled. */
  async idle(): Promise<void> {
    while (this.#inFlight > 0 || this.#queue.length > 0) {
      await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    }
  }

  /** Forget that the directory exists (it was removed, e.g. by `clear`). */
  forgetDir(): void {
    this.#dirReady = false;
  }

  #pump(): void {
    while (this.#inFlight < this.#options.maxInFlight && this.#queue.length > 0) {
      const batch = this.#take();
      this.#inFlight++;
      void this.#commit(batch)
        .catch((error: unknown) => {
          for (const pending of batch) pending.reject(error);
        })
        .finally(() => {
          this.#inFlight--;
          this.#pump();
          if (this.#inFlight === 0 && this.#queue.length === 0) {
            for (const resolve of this.#idleWaiters.splice(0)) resolve();
          }
        });
    }
  }

  #take(): Pending[] {
    const { maxBatch, maxBytes } = this.#options;
    let bytes = 0;
    let count = 0;
    while (count < this.#queue.length && count < maxBatch && (count === 0 || bytes < maxBytes)) {
      const { op } = this.#queue[count]!;
      if ('line' in op) bytes += op.line.length;
      count++;
    }
    return this.#queue.splice(0, count);
  }

  async #commit(batch: Pending[]): Promise<void> {
    const { dir, tempDir, sync } = this.#options;
    if (!this.#dirReady) {
      await ensureDir(dir, sync);
      this.#dirReady = true;
    }
    const writes = batch.filter((pending) => 'line' in pending.op);
    let temp: string | undefined;
    if (writes.length > 0) {
      temp = path.join(tempDir, tempName());
      const lines = writes.map((pending) => (pending.op as { line: string }).line);
      await writeNewFile(temp, `${lines.join('\n')}\n`, sync);
    }
    // A lone replace takes the temp file itself; otherwise each name gets a hard link.
    const lone = writes.length === 1 && writes[0]!.op.kind === 'replace' ? writes[0] : undefined;

    const results = await Promise.allSettled(batch.map((pending) => this.#apply(pending.op, temp, pending === lone)));
    const retry: Pending[] = [];
    let applied = false;
    let tempTaken = false;
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') {
        applied = true;
        if (batch[i] === lone) tempTaken = true;
      } else if (errorCode(result.reason) === 'ENOENT' && batch[i]!.retries < MAX_RETRIES) retry.push(batch[i]!);
    });
    // The temp name is not needed once linked; its removal need not be durable.
    if (temp && !tempTaken) await removeQuietly(temp);
    try {
      if (sync && applied) await syncDir(dir);
    } catch (error) {
      // The directory vanished after the links went in (a concurrent clear): redo all.
      if (errorCode(error) === 'ENOENT' && batch.every((pending) => pending.retries < MAX_RETRIES)) {
        return this.#requeue(batch);
      }
      throw error;
    }
    results.forEach((result, i) => {
      const pending = batch[i]!;
      if (retry.includes(pending)) return;
      if (result.status === 'fulfilled') pending.resolve(result.value);
      else pending.reject(result.reason);
    });
    if (retry.length > 0) this.#requeue(retry);
  }

  #requeue(pendings: Pending[]): void {
    // ENOENT: the directory was removed (clear) or our temp file was taken for stale.
    this.#dirReady = false;
    for (const pending of pendings) pending.retries++;
    this.#queue.unshift(...pendings);
  }

  async #apply(op: WriteOp, temp: string | undefined, takeTemp: boolean): Promise<WriteOutcome> {
    const { tempDir, sync } = this.#options;
    switch (op.kind) {
      case 'create':
        for (;;) {
          try {
            await link(temp!, op.file);
            return { created: true };
          } catch (error) {
            if (errorCode(error) !== 'EEXIST') throw error;
          }
          const existing = await readAndFlush(op.file, sync);
          // Removed between our link and our read: try to create it again.
          if (existing !== undefined) return { created: false, existing };
        }
      case 'replace':
        if (takeTemp) {
          await renameReplacing(temp!, op.file);
        } else {
          const own = path.join(tempDir, tempName());
          await link(temp!, own);
          try {
            await renameReplacing(own, op.file);
          } catch (error) {
            await removeQuietly(own);
            throw error;
          }
        }
        return { created: true };
      case 'remove':
        if (op.ifIdentity !== undefined && (await identityAt(op.file)) !== op.ifIdentity) {
          return { created: false, existing: undefined };
        }
        try {
          await unlink(op.file);
        } catch (error) {
          if (errorCode(error) !== 'ENOENT') throw error;
          return { created: false, existing: undefined };
        }
        return { created: true };
      case 'flush':
        return { created: false, existing: await readAndFlush(op.file, sync) };
    }
  }
}
