// Applying a snapshot's patch chain to the index of a restore, link by link, each one whole or
// not at all: a link counts as applied only when git applied all of it and the tree it makes
// is the tree the capture recorded for it. The chain stops at the first link that fails.
// A chain of several links is first applied in one go (one git apply, one write-tree): when
// that makes the last link's tree, every link applied; only otherwise is it walked link by link.
//
// The files a link carries whole (binary or large: patch-chain.ts) are written into the
// repository's object store first, each checked against its sha256 and then its object id; the
// patch names them, and git apply takes those objects as they are.
import { readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { PatchLink } from "../../domain/capture-manifest.ts";
import { isStrataError, StrataError } from "../../domain/errors.ts";
import type { MissingChangeSet } from "../../domain/restore-result.ts";
import { writeTree } from "../../git/commands.ts";
import { copyBlobToFile, type BlobSource } from "./restore-blobs.ts";
import { applyPatchToIndex, readTreeToIndex, writeBlobObjects } from "../../git/restore-commands.ts";
import type { GitRunner } from "../../git/runner.ts";

export interface ChainOutcome {
  applied: PatchLink[];
  /** The tree the index holds after the applied links. */
  tree: string;
  /** The first link that failed, why, and everything after it. */
  failure: { error: StrataError; missing: MissingChangeSet[] } | null;
  /** Files the failed and later links touch, from the patches that could be read. */
  paths: string[];
  /** False when a failed link's patch could not be read (its files are unknown). */
  pathsComplete: boolean;
}

/** Unquotes a path git printed in C style ("a/na\303\257ve"). */
export function unquoteGitPath(quoted: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < quoted.length; i++) {
    const ch = quoted[i] ?? "";
    if (ch !== "\\") {
      bytes.push(...Buffer.from(ch, "utf8"));
      continue;
    }
    const next = quoted[++i] ?? "";
    const simple: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '"': 34, "\\": 92 };
    if (next in simple) bytes.push(simple[next] ?? 0);
    else if (/[0-7]/.test(next)) {
      const octal = quoted.slice(i, i + 3);
      bytes.push(parseInt(octal, 8));
      i += 2;
    } else bytes.push(...Buffer.from(next, "utf8"));
  }
  return Buffer.from(bytes).toString("utf8");
}

/**
 * The files a patch touches, from its `diff --git` lines. Patches are written without renames
 * and with a/ and b/ prefixes, so both names of a line are the same path.
 */
export function pathsInPatch(patch: Buffer): string[] {
  const paths: string[] = [];
  const marker = Buffer.from("diff --git ");
  let at = 0;
  while (at < patch.length) {
    const end = patch.indexOf(0x0a, at);
    const lineEnd = end < 0 ? patch.length : end;
    if (patch.subarray(at, at + marker.length).equals(marker)) {
      const rest = patch.subarray(at + marker.length, lineEnd).toString("utf8");
      if (rest.startsWith('"')) {
        const close = /^"((?:[^"\\]|\\.)*)"/.exec(rest);
        if (close?.[1]) paths.push(unquoteGitPath(close[1]).replace(/^a\//, ""));
      } else if (rest.startsWith("a/")) {
        const length = (rest.length - 5) / 2;
        if (Number.isInteger(length) && length > 0) paths.push(rest.slice(2, 2 + length));
      }
    }
    at = lineEnd + 1;
  }
  return paths;
}

function missingLink(link: PatchLink, reason: MissingChangeSet["reason"]): MissingChangeSet {
  return { uuid: link.uuid, kind: link.kind, digest: link.digest, size: link.size, reason };
}

function reasonOf(error: StrataError): MissingChangeSet["reason"] {
  if (error.code === "BLOB_MISSING") return "blob-missing";
  if (error.code === "BLOB_CORRUPT") return "blob-corrupt";
  if (error.code === "TREE_MISMATCH") return "tree-differs";
  return "does-not-apply";
}

async function patchPaths(file: string): Promise<string[] | null> {
  try {
    const size = (await stat(file)).size;
    if (size > 512 * 1024 * 1024) return null;
    return pathsInPatch(await readFile(file));
  } catch {
    return null;
  }
}

/** Writes the files `link` carries whole into the object store, verified to their object ids. */
async function writeWholeFiles(
  git: GitRunner,
  link: PatchLink,
  opts: { blobs: BlobSource; scratch: string; signal?: AbortSignal },
): Promise<void> {
  const files = link.files ?? [];
  if (files.length === 0) return;
  const paths = files.map((file, i) => join(opts.scratch, `${link.uuid}.file${i}`));
  try {
    for (const [i, file] of files.entries()) {
      await copyBlobToFile(opts.blobs, file.digest, paths[i] as string, { size: file.size, signal: opts.signal });
    }
    const written = await git.run(writeBlobObjects(paths));
    for (const [i, file] of files.entries()) {
      if (written[i] !== file.oid) {
        throw new StrataError("BLOB_CORRUPT", `Blob ${file.digest} is not the object ${file.oid} its patch names.`, {
          hint: "The snapshot's record does not match its content. Restore another snapshot, or capture again.",
          data: { digest: file.digest, oid: file.oid, actual: written[i] ?? null },
          retryable: false,
        });
      }
    }
  } finally {
    await Promise.all(paths.map((path) => rm(path, { force: true })));
  }
}

/**
 * Every link at once: one `git apply` of all the patches (it applies each onto what the ones
 * before it made) and one write-tree, instead of reading and writing the index and the tree once
 * a link. The tree it makes, when that is the last link's recorded tree; null when a patch cannot
 * be read or applied or the tree differs, and the caller goes link by link to find which.
 */
async function applyWholeChain(
  git: GitRunner,
  opts: { indexFile: string; links: readonly PatchLink[]; blobs: BlobSource; scratch: string; signal?: AbortSignal },
): Promise<string | null> {
  const files = opts.links.map((link) => join(opts.scratch, `${link.uuid}.patch`));
  try {
    for (const [i, link] of opts.links.entries()) {
      await copyBlobToFile(opts.blobs, link.digest, files[i] as string, { size: link.size, signal: opts.signal });
      await writeWholeFiles(git, link, opts);
    }
    await git.run(applyPatchToIndex(opts.indexFile, ...(files as [string, ...string[]])));
    const tree = await git.run(writeTree(opts.indexFile));
    return tree === opts.links[opts.links.length - 1]?.tree ? tree : null;
  } catch (caught) {
    if (isStrataError(caught) && ["BLOB_MISSING", "BLOB_CORRUPT", "GIT_FAILED"].includes(caught.code)) return null;
    throw caught;
  } finally {
    await Promise.all(files.map((file) => rm(file, { force: true })));
  }
}

/**
 * Applies `links` in order onto `start` (HEAD's commit, or the empty tree) in the index and
 * returns what applied. Later links build on earlier ones, so the first failure ends the chain.
 */
export async function applyChain(
  git: GitRunner,
  opts: {
    indexFile: string;
    start: string;
    links: readonly PatchLink[];
    blobs: BlobSource;
    scratch: string;
    signal?: AbortSignal;
  },
): Promise<ChainOutcome> {
  await git.run(readTreeToIndex(opts.indexFile, opts.start));
  if (opts.links.length > 1) {
    const whole = await applyWholeChain(git, opts);
    if (whole !== null) return { applied: [...opts.links], tree: whole, failure: null, paths: [], pathsComplete: true };
    await git.run(readTreeToIndex(opts.indexFile, opts.start));
  }
  let tree = await git.run(writeTree(opts.indexFile));
  const applied: PatchLink[] = [];
  for (const [i, link] of opts.links.entries()) {
    const file = join(opts.scratch, `${link.uuid}.patch`);
    let error: StrataError | null = null;
    let readable = false;
    try {
      await copyBlobToFile(opts.blobs, link.digest, file, { size: link.size, signal: opts.signal });
      readable = true;
      await writeWholeFiles(git, link, opts);
      await git.run(applyPatchToIndex(opts.indexFile, file));
      const after = await git.run(writeTree(opts.indexFile));
      if (after !== link.tree) {
        // Whole or not at all: put the index back to the tree before this link.
        await git.run(readTreeToIndex(opts.indexFile, tree));
        error = mismatch(link, after);
      } else {
        tree = after;
        applied.push(link);
      }
    } catch (caught) {
      if (!isStrataError(caught)) throw caught;
      if (caught.code === "BLOB_MISSING" || caught.code === "BLOB_CORRUPT") error = caught;
      else if (caught.code === "GIT_FAILED") error = deltaFailed(link, caught);
      else throw caught;
    }
    if (error) {
      const rest = opts.links.slice(i);
      const paths = new Set<string>();
      let complete = true;
      for (const [j, later] of rest.entries()) {
        const laterFile = join(opts.scratch, `${later.uuid}.patch`);
        if (j > 0) {
          try {
            await copyBlobToFile(opts.blobs, later.digest, laterFile, { size: later.size, signal: opts.signal });
          } catch (caught) {
            if (!isStrataError(caught)) throw caught;
            complete = false;
            continue;
          }
        } else if (!readable) {
          complete = false;
          continue;
        }
        const found = await patchPaths(laterFile);
        if (found === null) complete = false;
        else for (const p of found) paths.add(p);
        await rm(laterFile, { force: true });
      }
      return {
        applied,
        tree,
        failure: {
          error,
          missing: rest.map((l, j) => missingLink(l, j === 0 ? reasonOf(error) : "after-failure")),
        },
        paths: [...paths].sort(),
        pathsComplete: complete,
      };
    }
    await rm(file, { force: true });
  }
  return { applied, tree, failure: null, paths: [], pathsComplete: true };
}

function mismatch(link: PatchLink, actual: string): StrataError {
  return new StrataError(
    "TREE_MISMATCH",
    `Change set ${link.uuid} applied but made tree ${actual}, not the recorded ${link.tree}.`,
    { data: { uuid: link.uuid, expected: link.tree, actual } },
  );
}

function deltaFailed(link: PatchLink, cause: unknown): StrataError {
  return new StrataError("DELTA_FAILED", `Change set ${link.uuid} does not apply to its base ${link.base}.`, {
    hint: "The patch no longer matches the commit it was recorded against.",
    data: { uuid: link.uuid, base: link.base },
    cause,
  });
}
