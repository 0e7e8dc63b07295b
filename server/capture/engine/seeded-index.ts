// A private index that holds a recorded tree and keeps the checkout's own stat data for every
// file whose recorded content the checkout's index already has. One `git status` against it then
// re-reads only the files whose stat data changed, as `git status` does against the checkout's
// own index, instead of every file of the tree: a verify or a resume in place costs about one
// `git status`. The checkout's index is only read, never written. An index of the checkout that
// already holds the tree (its own after a restore or a commit of the recorded edits; else that of
// its last capture, which has the stat data of uncommitted recorded edits) is used as it is, so
// nothing is copied, merged or read again: git only reads the checkout's own, and refreshes a
// capture's as git status refreshes its own index (worktree-drift.ts, under the capture's lock).
import { readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isStrataError } from "../../domain/errors.ts";
import { oidArg, readTreeInto } from "../../git/commands.ts";
import type { GitCommand, GitRunner } from "../../git/runner.ts";

export interface IndexSummary {
  /**
   * Whether git trusts some entry without looking at its file (assume-unchanged, skip-worktree):
   * a copy keeping them would hide a changed file, so such an index is not used.
   */
  unchecked: boolean;
  /** The tree the index holds, when its cache of trees says so (null when it does not know). */
  tree: string | null;
}

/**
 * Reads what seeding needs from an index file (versions 2 to 4): null when it is not an index
 * this reader knows.
 */
export function summarizeIndex(index: Buffer, hashBytes: 20 | 32): IndexSummary | null {
  if (index.length < 12 || index.toString("latin1", 0, 4) !== "DIRC") return null;
  const version = index.readUInt32BE(4);
  if (version < 2 || version > 4) return null;
  const count = index.readUInt32BE(8);
  let unchecked = false;
  let at = 12;
  for (let i = 0; i < count; i++) {
    const start = at;
    at += 40 + hashBytes;
    if (at + 2 > index.length) return null;
    const flags = index.readUInt16BE(at);
    at += 2;
    if (flags & 0x8000) unchecked = true; // assume-valid
    if (flags & 0x4000) {
      if (version < 3 || at + 2 > index.length) return null;
      if (index.readUInt16BE(at) & 0x4000) unchecked = true; // skip-worktree
      at += 2;
    }
    if (version === 4) {
      // A varint (bytes of the previous name to drop), then the rest of the name, NUL-ended.
      while (at < index.length && (index[at] ?? 0) & 0x80) at++;
      at++;
      const end = index.indexOf(0, at);
      if (end < 0) return null;
      at = end + 1;
    } else {
      const end = index.indexOf(0, at);
      if (end < 0) return null;
      // The entry is NUL-padded to a multiple of 8 bytes (at least one NUL).
      at = start + Math.ceil((end + 1 - start) / 8) * 8;
    }
  }
  return { unchecked, tree: rootOfTreeCache(index, at, hashBytes) };
}

/**
 * The root tree of the index's cache of trees (the TREE extension, right after the entries):
 * its first record is the root, `"" NUL <entries> SP <subtrees> LF <tree id>`, with -1 entries
 * when the cache is not valid.
 */
function rootOfTreeCache(index: Buffer, at: number, hashBytes: number): string | null {
  // The last `hashBytes` bytes are the file's checksum, never an extension.
  const end = index.length - hashBytes;
  while (at + 8 <= end) {
    const signature = index.toString("latin1", at, at + 4);
    const size = index.readUInt32BE(at + 4);
    const data = at + 8;
    if (signature === "TREE") {
      if (index[data] !== 0) return null;
      const newline = index.indexOf(10, data + 1);
      if (newline < 0 || newline > data + size) return null;
      const [entries] = index.toString("latin1", data + 1, newline).split(" ");
      if (Number(entries) < 0 || newline + 1 + hashBytes > data + size) return null;
      return index.toString("hex", newline + 1, newline + 1 + hashBytes);
    }
    at = data + size;
  }
  return null;
}

/**
 * A one-tree merge: the index becomes `tree`, keeping the stat data of entries that already hold
 * it. `-i`: the files are not consulted (a changed file is what the comparison is to find).
 */
function mergeTreeIntoIndex(indexFile: string, tree: string): GitCommand<void> {
  return {
    args: ["-c", "core.splitIndex=false", "read-tree", "-i", "-m", oidArg(tree)],
    env: { GIT_INDEX_FILE: indexFile, GIT_OPTIONAL_LOCKS: "1" },
    parse: () => undefined,
  };
}

interface ReadIndex {
  path: string;
  bytes: Buffer;
  mtimeMs: number;
  /** Its stat data when it was read: a rewrite (git renames a new file into place) changes it. */
  signature: string;
  /** The tree it holds (null: unknown). */
  tree: string | null;
}

async function signatureOf(path: string): Promise<{ signature: string; mtimeMs: number } | null> {
  const info = await stat(path, { bigint: true }).catch(() => null);
  if (!info) return null;
  return { signature: `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`, mtimeMs: Number(info.mtimeMs) };
}

/** An index file's bytes and stat data, not yet looked at (null: none). */
async function readIndexBytes(path: string) {
  // Dated before it is read: a rewrite in between only makes the date earlier than the bytes.
  const info = await signatureOf(path);
  const bytes = info && (await readFile(path).catch(() => null));
  return info && bytes ? { path, bytes, ...info } : null;
}

/** An index file git checks every entry of, or null when there is none (or it cannot be used). */
function summarized(read: Awaited<ReturnType<typeof readIndexBytes>>, hashBytes: 20 | 32): ReadIndex | null {
  const summary = read && summarizeIndex(read.bytes, hashBytes);
  if (!read || !summary || summary.unchecked) return null;
  return { ...read, tree: summary.tree };
}

/** Writes a copy of an index to `indexFile`. */
async function copyIndex(index: ReadIndex, indexFile: string): Promise<void> {
  await writeFile(indexFile, index.bytes);
  // git re-reads entries changed at or after the index file's own mtime ("racily clean"); the
  // copy is dated no later than the original so that check still fires.
  const seconds = Math.floor(index.mtimeMs / 1000) - 1;
  await utimes(indexFile, seconds, seconds);
}

interface SeedOptions {
  gitDir: string;
  indexFile: string;
  tree: string;
  objectFormat: "sha1" | "sha256";
  /** Other indexes of the checkout that may hold `tree` with stat data (its captures' private indexes). */
  alsoFrom?: readonly string[];
}

/**
 * An index of the checkout that already holds `tree` with stat data git checks (its own, after a
 * restore or a commit of the recorded edits; else one of `alsoFrom`), found without starting git.
 * Else the checkout's own index (null: none git can use), for the merge.
 */
export async function findIndexHoldingTree(
  opts: Omit<SeedOptions, "indexFile">,
): Promise<{ holding: ReadIndex } | { own: ReadIndex | null }> {
  const hashBytes = opts.objectFormat === "sha256" ? 32 : 20;
  // Read at once, looked at in order: the others only when the checkout's own does not hold it.
  const [own, ...others] = await Promise.all(
    [join(opts.gitDir, "index"), ...(opts.alsoFrom ?? [])].map((path) => readIndexBytes(path)),
  );
  const ownIndex = summarized(own ?? null, hashBytes);
  if (ownIndex?.tree === opts.tree) return { holding: ownIndex };
  for (const other of others) {
    const index = summarized(other ?? null, hashBytes);
    if (index?.tree === opts.tree) return { holding: index };
  }
  return { own: ownIndex };
}

/** Whether an index is still the file that was read (git read that one if so). */
export async function unchangedSinceRead(index: ReadIndex): Promise<boolean> {
  return (await signatureOf(index.path))?.signature === index.signature;
}

/**
 * Fills `indexFile` with `tree` when copyIndexHoldingTree found no index holding it: the
 * checkout's own index merged with the tree; a checkout without an index, one whose index git
 * cannot merge (unresolved conflicts) or one with entries git never checks gets a plain index of
 * the tree, and every file is read.
 */
async function mergeIndexWithTree(
  git: GitRunner,
  opts: Pick<SeedOptions, "indexFile" | "tree">,
  own: ReadIndex | null,
): Promise<void> {
  if (own) {
    await copyIndex(own, opts.indexFile);
    try {
      await git.run(mergeTreeIntoIndex(opts.indexFile, opts.tree));
      return;
    } catch (error) {
      if (!isStrataError(error, "GIT_FAILED")) throw error;
    }
  }
  await rm(opts.indexFile, { force: true });
  await git.run(readTreeInto(opts.indexFile, opts.tree));
}

/**
 * Fills `indexFile` (a private file) with `tree`, seeded from an index of the checkout that
 * holds it, else from the checkout's own index merged with it (see mergeIndexWithTree).
 */
export async function seedIndexWithTree(git: GitRunner, opts: SeedOptions): Promise<void> {
  const found = await findIndexHoldingTree(opts);
  if ("holding" in found) await copyIndex(found.holding, opts.indexFile);
  else await mergeIndexWithTree(git, opts, found.own);
}
