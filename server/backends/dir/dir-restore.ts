// Restoring a `dir` snapshot into a new directory: the record chain read and checked first
// (a hostile record is refused before a byte is written), then directories, files (each piece
// and each whole file checked against its digest) and links written into a staging directory
// next to the target, the staging directory walked again and its digest compared with the
// record's, and only then renamed into place.
//
// Content the store no longer has does not stop the restore unless asked to: the files whose
// pieces are missing are left out and named, and the outcome is degraded.
import { createHash } from "node:crypto";
import { closeSync, fchmodSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import { chmod, open, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import {
  dirStateDigest,
  filePieces,
  type DirEntry,
  type DirFileEntry,
  type DirState,
} from "../../domain/dir-manifest.ts";
import { isStrataError, StrataError } from "../../domain/errors.ts";
import type { BlobSource } from "../../restore/engine/restore-blobs.ts";
import { checkTarget, createStaging, removeStaleRestores } from "../../restore/engine/restore-staging.ts";
import { readWhole } from "../content-store.ts";
import { loadDirChain } from "./dir-chain.ts";
import { mapParallel, walkDir } from "./dir-walk.ts";
import { sha256 } from "./chunks.ts";

export interface DirRestoreOptions {
  /** Where the pieces are read; `readMany` (when it has it) reads small ones many at a time. */
  source: BlobSource & { readMany?(digests: readonly string[]): Promise<Map<string, Buffer>> };
  /** This host's restore state (crash records of interrupted restores). */
  stateDir: string;
  /** Fail on the first missing or damaged piece instead of restoring the rest. */
  exactOnly?: boolean;
  signal?: AbortSignal;
  onProgress?: (phase: "record" | "write" | "verify" | "publish", done: number, total: number) => void;
}

export interface DirRestoreReport {
  status: "restored" | "degraded";
  path: string;
  /** The digest the written directory was verified to have. */
  stateDigest: string;
  /** What the record says the directory is. */
  recordedDigest: string;
  files: number;
  bytes: number;
  /** Files left out because their content could not be read, and why. */
  missing: { paths: string[]; cause: "BLOB_MISSING" | "BLOB_CORRUPT" | null; message: string | null };
  omitted: { path: string; reason: string }[];
}

function damaged(digest: string): StrataError {
  return new StrataError("BLOB_CORRUPT", `Blob ${digest} is damaged.`, { data: { digest } });
}

/** Writes one file from its pieces (read ahead in `ready`, else opened), checking every digest. */
async function writeFileEntry(
  source: BlobSource,
  ready: ReadonlyMap<string, Buffer>,
  into: string,
  entry: DirFileEntry,
  signal?: AbortSignal,
): Promise<string> {
  const handle = await open(join(into, entry.path), "wx", 0o600);
  try {
    const whole = createHash("sha256");
    const pieces = filePieces(entry);
    for (const piece of pieces) {
      signal?.throwIfAborted();
      const bytes = ready.get(piece.digest) ?? (await readWhole(source, piece.digest, signal));
      if (bytes.length !== piece.size) throw damaged(piece.digest);
      // A one-piece file's digest is checked once, as the whole file's.
      if (pieces.length > 1 && sha256(bytes) !== piece.digest) throw damaged(piece.digest);
      whole.update(bytes);
      await handle.write(bytes);
    }
    const digest = whole.digest("hex");
    if (digest !== entry.digest) {
      throw new StrataError("BLOB_CORRUPT", `The pieces of ${entry.path} do not make the recorded file.`, {
        data: { path: entry.path },
      });
    }
    await handle.chmod(entry.mode);
    return digest;
  } finally {
    await handle.close();
  }
}

/**
 * Writes a one-piece file whose bytes are in memory, with synchronous calls: for the many small
 * files of a dependency tree, a round trip through libuv's thread pool per call costs more than
 * the write itself.
 */
function writeSmallFile(into: string, entry: DirFileEntry, bytes: Buffer): string {
  if (bytes.length !== entry.size) throw damaged(entry.digest);
  const digest = sha256(bytes);
  if (digest !== entry.digest) throw damaged(entry.digest);
  const path = join(into, entry.path);
  // The usual modes (0644, 0755) survive the umask: created with their mode, no chmod after.
  if ((entry.mode & ~UMASK) === entry.mode) {
    writeFileSync(path, bytes, { flag: "wx", mode: entry.mode });
    return digest;
  }
  const fd = openSync(path, "wx", 0o600);
  try {
    writeSync(fd, bytes);
    fchmodSync(fd, entry.mode);
  } finally {
    closeSync(fd);
  }
  return digest;
}

/** This process's file-creation mask (read once: it does not change under a restore). */
const UMASK = process.umask();

/**
 * The files in groups, each group's small pieces read in one store round trip: a small first
 * group, so that writing starts early, then groups of 500.
 */
function fileGroups(files: DirFileEntry[]): DirFileEntry[][] {
  const groups: DirFileEntry[][] = [];
  for (let start = 0; start < files.length;) {
    const size = start === 0 ? 100 : 500;
    groups.push(files.slice(start, start + size));
    start += size;
  }
  return groups;
}

/**
 * The digest of a directory as it stands: its entries as lstat and readlink see them now (types,
 * modes, sizes, link targets: anything added, removed or changed since it was written shows), with
 * each file's content digest taken from the bytes written to it.
 */
async function writtenDigest(dir: string, written: ReadonlyMap<string, string>): Promise<string> {
  const walk = await walkDir(dir, { denyList: false, justWritten: true });
  return dirStateDigest(
    walk.entries.map((e): DirEntry => {
      if (e.type !== "file") return e;
      const digest = written.get(e.path) ?? "not written by this restore";
      return { type: "file", path: e.path, mode: e.mode, size: e.stats.size, digest };
    }),
  );
}

function pieceFailure(error: unknown): "BLOB_MISSING" | "BLOB_CORRUPT" | null {
  if (isStrataError(error, "BLOB_MISSING")) return "BLOB_MISSING";
  if (isStrataError(error, "BLOB_CORRUPT")) return "BLOB_CORRUPT";
  return null;
}

/**
 * Restores the `dir` snapshot `ref` into `into` (new or empty). Throws UNSAFE_TARGET,
 * INVALID_SNAPSHOT, the record's BLOB_MISSING/BLOB_CORRUPT (nothing written), TREE_MISMATCH
 * when the written directory is not what the record says, or the first content failure when
 * `exactOnly`.
 */
export async function restoreDir(ref: string, into: string, opts: DirRestoreOptions): Promise<DirRestoreReport> {
  const progress = opts.onProgress ?? (() => undefined);
  const target = await checkTarget(into);
  progress("record", 0, 1);
  const chain = await loadDirChain(opts.source, ref, opts.signal);
  progress("record", 1, 1);
  const entries = [...chain.state.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
  const files = entries.filter((e): e is DirFileEntry => e.type === "file");
  const groups = fileGroups(files);
  const readGroup = (group: DirFileEntry[] | undefined) => {
    const small = (group ?? []).filter((f) => !f.chunks).map((f) => f.digest);
    const read =
      opts.source.readMany && small.length > 0
        ? opts.source.readMany(small)
        : Promise.resolve(new Map<string, Buffer>());
    // Awaited where it is used; until then a failure is not an unhandled rejection.
    read.catch(() => undefined);
    return read;
  };
  // The first files' small pieces are read while the staging directory is made.
  let reading = readGroup(groups[0]);
  // Interrupted restores' leftovers are tidied while this one's staging directory is made (a
  // live restore's, this one's included, is never touched).
  const [, staging] = await Promise.all([removeStaleRestores(opts.stateDir), createStaging(target, opts.stateDir)]);
  try {
    for (const entry of entries) if (entry.type === "dir") mkdirSync(join(staging.dir, entry.path), { mode: 0o700 });

    const missing: string[] = [];
    let cause: DirRestoreReport["missing"]["cause"] = null;
    let message: string | null = null;
    let done = 0;
    let bytes = 0;
    const written = new Map<string, string>();
    let sinceYield = 0;
    const write = async (entry: DirFileEntry, ready: ReadonlyMap<string, Buffer>) => {
      try {
        const inMemory = entry.chunks ? undefined : ready.get(entry.digest);
        const digest = inMemory
          ? writeSmallFile(staging.dir, entry, inMemory)
          : await writeFileEntry(opts.source, ready, staging.dir, entry, opts.signal);
        // Synchronous writes hold the event loop: let other work (a checkout restored beside
        // this, a heartbeat) run between every few of them.
        if (inMemory && ++sinceYield % 8 === 0) await new Promise((wake) => setImmediate(wake));
        written.set(entry.path, digest);
        bytes += entry.size;
      } catch (error) {
        const failure = pieceFailure(error);
        if (!failure || opts.exactOnly) throw error;
        missing.push(entry.path);
        cause ??= failure;
        message ??= (error as Error).message;
        await rm(join(staging.dir, entry.path), { force: true });
      }
      progress("write", ++done, files.length);
    };
    // The next group's small files are read while this group's are written.
    for (const [i, group] of groups.entries()) {
      const ready = await reading;
      reading = readGroup(groups[i + 1]);
      await mapParallel(group, (entry) => write(entry, ready), 16);
    }
    await reading;
    for (const entry of entries)
      if (entry.type === "symlink") await symlink(entry.target, join(staging.dir, entry.path));
    // Directory modes last, deepest first: a read-only directory is filled before it is closed.
    for (const entry of [...entries].reverse())
      if (entry.type === "dir") await chmod(join(staging.dir, entry.path), entry.mode);

    progress("verify", 0, 1);
    const expected: DirState = new Map(chain.state);
    for (const path of missing) expected.delete(path);
    const want = missing.length === 0 ? chain.top.stateDigest : dirStateDigest(expected.values());
    const got = await writtenDigest(staging.dir, written);
    if (got !== want) {
      throw new StrataError("TREE_MISMATCH", `The restored directory is not what snapshot ${ref} records.`, {
        hint: "Something changed the staging directory during the restore; restore again.",
        data: { expected: want, actual: got },
      });
    }
    progress("verify", 1, 1);
    progress("publish", 0, 1);
    await staging.publish();
    progress("publish", 1, 1);
    missing.sort();
    return {
      status: missing.length === 0 ? "restored" : "degraded",
      path: target,
      stateDigest: got,
      recordedDigest: chain.top.stateDigest,
      files: files.length - missing.length,
      bytes,
      missing: { paths: missing, cause, message },
      omitted: chain.top.omitted,
    };
  } catch (error) {
    await staging.discard();
    throw error;
  }
}
