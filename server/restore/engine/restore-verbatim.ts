// Writing the files a capture recorded verbatim (verbatim-files.ts) into a restored worktree
// once git has checked the index out: a file whose recorded blob the repository's attributes
// do not read back gets the bytes the capture stored for it, or else the blob's own content,
// and is verified by those bytes. Only where the index holds the recorded blob at that path, so
// a partial restore leaves the other files as git wrote them.
import { chmod, copyFile, lstat, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { dirname, join, sep } from "node:path";
import type { VerbatimFile } from "../../domain/capture-manifest.ts";
import { isStrataError, type StrataError } from "../../domain/errors.ts";
import { blobContents } from "../../git/commands.ts";
import { copyBlobToFile, type BlobSource } from "./restore-blobs.ts";
import { setIndexEntriesAfresh, treeFiles } from "../../git/restore-commands.ts";
import type { GitRunner } from "../../git/runner.ts";
import { holdsVerbatimBytes } from "../../capture/engine/verbatim-files.ts";

export interface VerbatimOutcome {
  /** Files that hold exactly their recorded bytes. */
  verified: Set<string>;
  /** Files that should have and do not (their stored bytes could not be had, or differ). */
  failed: string[];
  /** Why the first of them failed, when a stored blob was missing or damaged. */
  failure: StrataError | null;
}

const REGULAR_FILE = /^100(644|755)$/;
const NONE: VerbatimOutcome = { verified: new Set(), failed: [], failure: null };

/** The file's path in the worktree, or null unless it is a regular file inside it. */
async function targetIn(dir: string, path: string): Promise<string | null> {
  const target = join(dir, path);
  const st = await lstat(target).catch(() => null);
  if (!st?.isFile()) return null;
  const root = await realpath(dir);
  const parent = await realpath(dirname(target));
  return parent === root || parent.startsWith(`${root}${sep}`) ? target : null;
}

/** Replaces a file's content with another file's, keeping its mode (the executable bit). */
async function replaceContent(target: string, source: string): Promise<void> {
  const { mode } = await lstat(target);
  await copyFile(source, target);
  await chmod(target, mode & 0o7777);
}

/** Whether the file holds exactly what the record says: the stored bytes, or the blob's own. */
async function holdsRecordedBytes(target: string, file: VerbatimFile, objectFormat: "sha1" | "sha256") {
  return holdsVerbatimBytes(await readFile(target), file, objectFormat);
}

/**
 * Writes the verbatim files of `files` whose entry in `tree` (the tree the worktree was checked
 * out from) is the recorded blob, and checks each one's bytes.
 */
export async function writeVerbatimFiles(
  git: GitRunner,
  opts: {
    dir: string;
    indexFile: string;
    tree: string;
    files: readonly VerbatimFile[];
    blobs: BlobSource;
    scratch: string;
    objectFormat: "sha1" | "sha256";
    signal?: AbortSignal;
  },
): Promise<VerbatimOutcome> {
  if (opts.files.length === 0) return NONE;
  const entries = await git.run(treeFiles(opts.tree));
  const outcome: VerbatimOutcome = { verified: new Set(), failed: [], failure: null };
  /** Every file to check, and those whose content was replaced (their stat data is stale). */
  const placed: Array<{ file: VerbatimFile; target: string }> = [];
  const replaced: VerbatimFile[] = [];
  const fromObjects: Array<{ file: VerbatimFile; target: string }> = [];
  for (const file of opts.files) {
    const entry = entries.get(file.path);
    if (!entry || entry.oid !== file.oid || !REGULAR_FILE.test(entry.mode)) continue;
    const target = await targetIn(opts.dir, file.path);
    if (!target) {
      outcome.failed.push(file.path);
      continue;
    }
    if (!file.bytes) {
      // What checkout wrote is usually the blob's own content already (no conversion on the way out).
      if (!(await holdsRecordedBytes(target, file, opts.objectFormat))) fromObjects.push({ file, target });
      placed.push({ file, target });
      continue;
    }
    const staged = join(opts.scratch, `verbatim-${placed.length}`);
    try {
      await copyBlobToFile(opts.blobs, file.bytes.digest, staged, { size: file.bytes.size, signal: opts.signal });
      await replaceContent(target, staged);
      placed.push({ file, target });
      replaced.push(file);
    } catch (error) {
      if (!isStrataError(error, "BLOB_MISSING") && !isStrataError(error, "BLOB_CORRUPT")) throw error;
      outcome.failure ??= error;
      outcome.failed.push(file.path);
    } finally {
      await rm(staged, { force: true });
    }
  }
  if (fromObjects.length > 0) {
    const oids = [...new Set(fromObjects.map((f) => f.file.oid))];
    const contents = await git.run(blobContents(oids, 4 * 1024 ** 3));
    for (const { file, target } of fromObjects) {
      await writeFile(target, contents.get(file.oid) ?? Buffer.alloc(0));
      replaced.push(file);
    }
  }
  for (const { file, target } of placed) {
    if (await holdsRecordedBytes(target, file, opts.objectFormat)) outcome.verified.add(file.path);
    else outcome.failed.push(file.path);
  }
  // The index holds the stat data of what checkout wrote, and git takes a changed size for a
  // changed file without reading it: entries set afresh have none, so git reads these again.
  if (replaced.length > 0) {
    const again = replaced.map((file) => ({
      mode: entries.get(file.path)?.mode ?? "100644",
      oid: file.oid,
      path: file.path,
    }));
    await git.run(setIndexEntriesAfresh(opts.indexFile, again));
  }
  outcome.failed.sort();
  return outcome;
}
