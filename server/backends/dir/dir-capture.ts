// Capturing a directory as a `dir` snapshot: every file by content (large ones in
// content-defined pieces), modes, links, directories; stored in a content store, so a piece the
// store already has is never sent again; recorded as a delta on the parent record.
//
// A file whose size, times and inode match what the last capture of this directory saw (a stat
// cache, kept beside the caller's other capture state) keeps its recorded content without being
// read, as git's index does; files touched within the last two seconds are always read again.
import { createHash, randomUUID } from "node:crypto";
import { mkdir, readFile, realpath, rename, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import {
  DIR_FORMAT,
  DIR_FULL_EVERY,
  dirManifestBytes,
  dirStateDigest,
  type DirEntry,
  type DirFileEntry,
  type DirManifest,
  type DirOmission,
  type DirState,
} from "../../domain/dir-manifest.ts";
import { StrataError } from "../../domain/errors.ts";
import type { ContentStore } from "../content-store.ts";
import { sha256, splitPieces } from "./chunks.ts";
import { loadDirChain } from "./dir-chain.ts";
import { mapParallel, walkDir, type WalkedEntry } from "./dir-walk.ts";

export interface DirCaptureOptions {
  store: Pick<ContentStore, "missing" | "put" | "open">;
  /** The record this capture is layered on (the last capture of this directory), or null. */
  parent?: string | null;
  /** Capture only these paths below the root (dependency directories), not the whole root. */
  include?: readonly string[] | null;
  /** Where the stat cache lives (default: the user's cache directory). */
  cacheDir?: string;
  signal?: AbortSignal;
  onProgress?: (phase: "walk" | "read" | "upload" | "record", done: number, total: number) => void;
}

export interface DirCaptureResult {
  /** `unchanged`: the directory is what `parent` records, and nothing new was stored. */
  outcome: "captured" | "unchanged";
  /** The digest of the stored record: the artifact reference. */
  ref: string;
  manifest: DirManifest;
  /** Bytes of the directory's content (files and pieces, counted once per file). */
  sizeBytes: number;
  uploaded: { blobs: number; bytes: number };
  omitted: DirOmission[];
}

// --- the stat cache -----------------------------------------------------------------------------

const statCacheSchema = z.object({
  ref: z.string(),
  files: z.record(z.string(), z.tuple([z.number(), z.number(), z.number(), z.number()])),
});
type StatCache = z.infer<typeof statCacheSchema>;

/** Files changed this recently are read again next time (a write in the same tick as the stat). */
const RACY_MS = 2000;

function statKey(entry: Extract<WalkedEntry, { type: "file" }>): [number, number, number, number] {
  const s = entry.stats;
  return [s.size, s.mtimeMs, s.ctimeMs, s.ino];
}

function cacheFile(cacheDir: string, root: string, include: readonly string[] | null | undefined): string {
  const key = createHash("sha256")
    .update(JSON.stringify([root, include ?? null]))
    .digest("hex")
    .slice(0, 24);
  return join(cacheDir, `dir-${key}.json`);
}

async function readStatCache(file: string): Promise<StatCache | null> {
  try {
    return statCacheSchema.parse(JSON.parse(await readFile(file, "utf8")));
  } catch {
    return null; // missing or damaged: every file is read
  }
}

async function writeStatCache(file: string, cache: StatCache): Promise<void> {
  await mkdir(join(file, ".."), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(cache));
  await rename(tmp, file);
}

function defaultDirCacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "strata", "dir");
}

// --- uploading in batches -----------------------------------------------------------------------

/** Pieces held before asking the store which it lacks. */
const BATCH_BYTES = 64 * 1024 * 1024;
const BATCH_PIECES = 1024;

class Uploader {
  private pending = new Map<string, Uint8Array>();
  private pendingBytes = 0;
  private seen = new Set<string>();
  uploaded = { blobs: 0, bytes: 0 };
  constructor(private readonly store: Pick<ContentStore, "missing" | "put">) {}

  async add(digest: string, bytes: Uint8Array): Promise<void> {
    if (this.seen.has(digest)) return;
    this.seen.add(digest);
    this.pending.set(digest, bytes);
    this.pendingBytes += bytes.length;
    if (this.pendingBytes >= BATCH_BYTES || this.pending.size >= BATCH_PIECES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.pendingBytes = 0;
    const missing = await this.store.missing([...batch.keys()]);
    await mapParallel(
      missing,
      async (digest) => {
        const bytes = batch.get(digest)!;
        await this.store.put(digest, bytes);
        this.uploaded.blobs += 1;
        this.uploaded.bytes += bytes.length;
      },
      4,
    );
  }
}

// --- the capture --------------------------------------------------------------------------------

function sameEntry(a: DirEntry | undefined, b: DirEntry): boolean {
  if (!a || a.type !== b.type) return false;
  switch (b.type) {
    case "file":
      return a.type === "file" && a.digest === b.digest && a.mode === b.mode && a.size === b.size;
    case "symlink":
      return a.type === "symlink" && a.target === b.target;
    case "dir":
      return a.type === "dir" && a.mode === b.mode;
  }
}

/** The paths of `before` not in `after`, keeping only the topmost of each removed subtree. */
function removedPaths(before: DirState, after: DirState): string[] {
  const gone = [...before.keys()].filter((p) => !after.has(p)).sort();
  const top: string[] = [];
  for (const path of gone) {
    const last = top.at(-1);
    if (last !== undefined && path.startsWith(`${last}/`)) continue;
    top.push(path);
  }
  return top;
}

/** Captures `dir` into `opts.store`; throws UNREADABLE_PATH, INVALID_INPUT or the store's error. */
export async function captureDir(dir: string, opts: DirCaptureOptions): Promise<DirCaptureResult> {
  const progress = opts.onProgress ?? (() => undefined);
  let root: string;
  try {
    root = await realpath(dir);
    if (!(await stat(root)).isDirectory()) throw new Error("not a directory");
  } catch (error) {
    throw new StrataError("INVALID_INPUT", `${dir} is not a directory that can be captured.`, {
      hint: "Name an existing directory.",
      cause: error,
    });
  }
  const startedAt = Date.now();
  const parentRef = opts.parent ?? null;
  const chain = parentRef ? await loadDirChain(opts.store, parentRef, opts.signal) : null;
  const before: DirState = chain?.state ?? new Map();

  const cachePath = cacheFile(opts.cacheDir ?? defaultDirCacheDir(), root, opts.include);
  const cache = parentRef ? await readStatCache(cachePath) : null;
  const known = cache && cache.ref === parentRef ? cache.files : {};

  progress("walk", 0, 0);
  const walk = await walkDir(root, { include: opts.include, signal: opts.signal });
  const files = walk.entries.filter((e): e is Extract<WalkedEntry, { type: "file" }> => e.type === "file");
  const uploader = new Uploader(opts.store);
  const after: DirState = new Map();
  const nextCache: StatCache["files"] = {};
  let read = 0;

  const fileEntry = async (entry: Extract<WalkedEntry, { type: "file" }>): Promise<DirFileEntry> => {
    const key = statKey(entry);
    const seen = known[entry.path];
    const recorded = before.get(entry.path);
    const racy = entry.stats.mtimeMs >= startedAt - RACY_MS || entry.stats.ctimeMs >= startedAt - RACY_MS;
    if (!racy) nextCache[entry.path] = key;
    if (seen && recorded?.type === "file" && seen.every((v, i) => v === key[i]) && recorded.mode === entry.mode) {
      return recorded;
    }
    opts.signal?.throwIfAborted();
    const bytes = await readFile(join(root, entry.path));
    const { digest, pieces } = splitPieces(bytes);
    for (const piece of pieces) await uploader.add(piece.digest, piece.bytes);
    progress("read", ++read, files.length);
    return {
      type: "file",
      path: entry.path,
      mode: entry.mode,
      size: bytes.length,
      digest,
      ...(pieces.length > 1 ? { chunks: pieces.map((p) => ({ digest: p.digest, size: p.bytes.length })) } : {}),
    };
  };

  // Files are read a few at a time (bounded memory: the uploader flushes by size).
  const fileEntries = await mapParallel(files, fileEntry, 8);
  await uploader.flush();
  progress("upload", uploader.uploaded.blobs, uploader.uploaded.blobs);
  let fileIndex = 0;
  let sizeBytes = 0;
  for (const entry of walk.entries) {
    if (entry.type === "file") {
      const recorded = fileEntries[fileIndex++]!;
      sizeBytes += recorded.size;
      after.set(entry.path, recorded);
    } else if (entry.type === "symlink") {
      after.set(entry.path, { type: "symlink", path: entry.path, target: entry.target });
    } else {
      after.set(entry.path, { type: "dir", path: entry.path, mode: entry.mode });
    }
  }

  const stateDigest = dirStateDigest(after.values());
  const omittedSame = JSON.stringify(walk.omitted) === JSON.stringify(chain?.top.omitted ?? []);
  if (chain && chain.top.stateDigest === stateDigest && omittedSame) {
    await writeStatCache(cachePath, { ref: parentRef!, files: nextCache });
    return {
      outcome: "unchanged",
      ref: parentRef!,
      manifest: chain.top,
      sizeBytes,
      uploaded: uploader.uploaded,
      omitted: walk.omitted,
    };
  }

  progress("record", 0, 1);
  const layered = chain !== null && chain.top.depth + 1 < DIR_FULL_EVERY;
  const manifest: DirManifest = {
    format: DIR_FORMAT,
    id: randomUUID(),
    capturedAt: new Date(startedAt).toISOString(),
    parent: layered ? parentRef : null,
    depth: layered ? chain.top.depth + 1 : 0,
    stateDigest,
    entries: layered ? [...after.values()].filter((e) => !sameEntry(before.get(e.path), e)) : [...after.values()],
    removed: layered ? removedPaths(before, after) : [],
    omitted: walk.omitted,
    files: files.length,
    sizeBytes,
  };
  const bytes = dirManifestBytes(manifest);
  const ref = sha256(bytes);
  await opts.store.put(ref, bytes);
  uploader.uploaded.blobs += 1;
  uploader.uploaded.bytes += bytes.length;
  await writeStatCache(cachePath, { ref, files: nextCache });
  progress("record", 1, 1);
  return { outcome: "captured", ref, manifest, sizeBytes, uploaded: uploader.uploaded, omitted: walk.omitted };
}
