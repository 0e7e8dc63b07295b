// Git LFS files in a restored worktree. Checkout writes them as their pointers (checkoutIndex
// never lets git-lfs download); then each object is looked for, in order: in the snapshot (the
// capture stored the objects of files changed since HEAD), then on the recorded remotes, one
// after the other, until every LFS file has its content, and the files whose object is here are
// written again through the LFS filter. A file whose object none of them has keeps its pointer,
// which is what the recorded tree holds, so the restore still verifies; the
// `lfs-objects-unavailable` warning names exactly those files.
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import type { LfsObject } from "../../domain/capture-manifest.ts";
import { isStrataError } from "../../domain/errors.ts";
import type { RestoreWarning } from "../../domain/restore-result.ts";
import { indexFileEntries, type IndexEntry } from "../../git/commands.ts";
import { lfsObjectPath, lfsPointersAmong, lfsVersion, REGULAR_FILE, type LfsPointer } from "../../git/lfs.ts";
import { copyBlobToFile, type BlobSource } from "./restore-blobs.ts";
import {
  LFS_FILTER_CONFIG,
  lfsFetch,
  lfsFilteredPaths,
  setConfig,
  setIndexEntriesAfresh,
  smudgeLfsFiles,
} from "../../git/restore-commands.ts";
import type { FetchableRemote } from "./restore-history.ts";
import type { GitRunner } from "../../git/runner.ts";

export interface LfsRestoreOptions {
  /** The restored repository's git directory (its LFS store is `lfs/objects` there). */
  gitDir: string;
  indexFile: string;
  /** The tree the worktree was written from. */
  tree: string;
  /** The LFS objects the snapshot holds (the manifest's `lfsObjects`). */
  stored: readonly LfsObject[];
  blobs: BlobSource;
  scratch: string;
  remotes: readonly FetchableRemote[];
  fetchTimeoutMs: number;
  /** GIT_SSH_COMMAND for downloads, or null to keep the user's own. */
  sshCommand: () => Promise<string | null>;
  signal?: AbortSignal;
}

interface LfsFile {
  entry: IndexEntry;
  pointer: LfsPointer;
}

/** The index's LFS files: regular files the `lfs` filter applies to, whose blob is a pointer. */
async function lfsFilesOf(git: GitRunner, indexFile: string): Promise<Map<string, LfsFile>> {
  const entries = [...(await git.run(indexFileEntries(indexFile))).values()].filter((e) => REGULAR_FILE.test(e.mode));
  const files = new Map<string, LfsFile>();
  if (entries.length === 0) return files;
  const filtered = await git.run(
    lfsFilteredPaths(
      indexFile,
      entries.map((e) => e.path),
    ),
  );
  const candidates = entries.filter((e) => filtered.has(e.path));
  const pointers = await lfsPointersAmong(
    git,
    candidates.map((e) => e.oid),
  );
  for (const entry of candidates) {
    const pointer = pointers.get(entry.oid);
    if (pointer) files.set(entry.path, { entry, pointer });
  }
  return files;
}

/** A remote as git-lfs takes it: a local path as a file:// URL (git-lfs's own file transfer serves it). */
export function lfsRemoteUrl(fetchUrl: string): string {
  return isAbsolute(fetchUrl) ? pathToFileURL(fetchUrl).href : fetchUrl;
}

async function isPresent(gitDir: string, pointer: LfsPointer): Promise<boolean> {
  const st = await stat(lfsObjectPath(gitDir, pointer.oid)).catch(() => null);
  return st?.isFile() === true && st.size === pointer.size;
}

/** Puts the snapshot's copy of an object into the LFS store, checked by its sha256 (its oid). */
async function placeStored(opts: LfsRestoreOptions, pointer: LfsPointer): Promise<void> {
  const staged = join(opts.scratch, `lfs-${pointer.oid}`);
  try {
    await copyBlobToFile(opts.blobs, pointer.oid, staged, { size: pointer.size, signal: opts.signal });
    const target = lfsObjectPath(opts.gitDir, pointer.oid);
    await mkdir(dirname(target), { recursive: true });
    await rename(staged, target);
  } catch (error) {
    // A stored copy that is missing or damaged: a remote may still have the object.
    if (!isStrataError(error, "BLOB_MISSING") && !isStrataError(error, "BLOB_CORRUPT")) throw error;
  } finally {
    await rm(staged, { force: true });
  }
}

async function fetchFrom(git: GitRunner, opts: LfsRestoreOptions, remote: FetchableRemote): Promise<void> {
  try {
    const sshCommand = await opts.sshCommand();
    await git.run(lfsFetch(lfsRemoteUrl(remote.fetchUrl), opts.tree, { timeoutMs: opts.fetchTimeoutMs, sshCommand }));
  } catch (error) {
    // A remote that cannot be reached, refuses or times out leaves the objects to the next one.
    if (!isStrataError(error) || isStrataError(error, "ABORTED") || opts.signal?.aborted) throw error;
  }
}

function unavailable(paths: readonly string[], why: string, next: string): RestoreWarning {
  const named = paths.slice(0, 5).join(", ") + (paths.length > 5 ? ", …" : "");
  return {
    kind: "lfs-objects-unavailable",
    message: `${paths.length} Git LFS file(s) hold their pointer, not their content: ${why} (${named}). ${next}`.slice(
      0,
      2000,
    ),
    paths: paths.slice(0, 1000),
  };
}

/**
 * Gives the worktree's LFS files their content. Resolves with the warning naming the files that
 * keep their pointer, or null when there are none (or no LFS file at all).
 */
export async function restoreLfsFiles(git: GitRunner, opts: LfsRestoreOptions): Promise<RestoreWarning | null> {
  const files = await lfsFilesOf(git, opts.indexFile);
  if (files.size === 0) return null;
  if ((await git.run(lfsVersion())) === null) {
    return unavailable(
      [...files.keys()].sort(),
      "git-lfs is not installed on this host",
      "Install git-lfs, then restore again.",
    );
  }
  // The worktree is read back (verify, and the user's own git) through the filter that wrote it.
  for (const [key, value] of LFS_FILTER_CONFIG) await git.run(setConfig(key, value));

  const objects = new Map([...files.values()].map(({ pointer }) => [pointer.oid, pointer]));
  const missing = async () => {
    const left: LfsPointer[] = [];
    for (const pointer of objects.values()) if (!(await isPresent(opts.gitDir, pointer))) left.push(pointer);
    return left;
  };
  const stored = new Set(opts.stored.map((o) => o.oid));
  for (const pointer of await missing()) if (stored.has(pointer.oid)) await placeStored(opts, pointer);
  let left = await missing();
  for (const remote of opts.remotes) {
    if (left.length === 0) break;
    await fetchFrom(git, opts, remote);
    left = await missing();
  }

  const absent = new Set(left.map((p) => p.oid));
  const here = [...files.values()].filter((f) => !absent.has(f.pointer.oid)).map((f) => f.entry);
  if (here.length > 0) {
    // Checkout leaves alone a file whose stat data the index holds: these entries get none.
    await git.run(setIndexEntriesAfresh(opts.indexFile, here));
    await git.run(
      smudgeLfsFiles(
        opts.indexFile,
        here.map((e) => e.path),
      ),
    );
  }
  const pointers = [...files.values()]
    .filter((f) => absent.has(f.pointer.oid))
    .map((f) => f.entry.path)
    .sort();
  if (pointers.length === 0) return null;
  return unavailable(
    pointers,
    opts.remotes.length === 0
      ? "the snapshot records no remote to download their objects from"
      : "neither the snapshot nor any recorded remote has their object",
    "Push the objects from the machine that captured the snapshot (git lfs push --all <remote> for committed " +
      "files, git lfs push --object-id <remote> <oid> for a change not yet committed), then restore again.",
  );
}
