// The Git LFS objects a capture keeps: those of the files that differ from HEAD. The tree holds
// an LFS file's pointer (git-lfs's clean filter wrote it, and its object into the repository's
// LFS store), and git-lfs uploads an object only when a commit that needs it is pushed: no
// remote can be expected to have the content of an edit that is not committed. So the capture
// stores that content as a blob of its own (an LFS oid is the content's sha256, so it is the
// blob's digest too), within the same size limits as any changed file (the file's size in the
// worktree counted). The objects of committed files come from the recorded remotes at restore.
import { createHash } from "node:crypto";
import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { CaptureManifest, LfsObject } from "../../domain/capture-manifest.ts";
import { changedFilesBetween, emptyTree, treeOf } from "../../git/commands.ts";
import { filterDriversNamed } from "./filters.ts";
import { lfsObjectPath, lfsPointersAmong, REGULAR_FILE, type LfsPointer } from "../../git/lfs.ts";
import type { GitRunner } from "../../git/runner.ts";

export interface KeptLfsObjects {
  /** Sorted by oid. */
  entries: LfsObject[];
  /** Content this capture read, by digest (the previous capture's objects are not read again). */
  artifacts: Map<string, Buffer>;
}

const NONE: KeptLfsObjects = { entries: [], artifacts: new Map() };

async function holding(file: string, pointer: LfsPointer): Promise<Buffer | null> {
  const st = await lstat(file).catch(() => null);
  if (!st?.isFile() || st.size !== pointer.size) return null;
  const bytes = await readFile(file).catch(() => null);
  if (!bytes || createHash("sha256").update(bytes).digest("hex") !== pointer.oid) return null;
  return bytes;
}

/**
 * The content of one object: from the LFS store, else from the file in the worktree (which may
 * have changed since, hence the check), else null: then only a remote can provide it.
 */
async function contentOf(commonDir: string, root: string, path: string, pointer: LfsPointer) {
  return (await holding(lfsObjectPath(commonDir, pointer.oid), pointer)) ?? holding(join(root, path), pointer);
}

/** The LFS objects of the files of `tree` that differ from HEAD's, with the content to store. */
export async function keptLfsObjects(
  git: GitRunner,
  opts: {
    root: string;
    commonDir: string;
    head: string | null;
    tree: string;
    /** The texts of the attribute files that apply (no LFS filter named: no LFS file). */
    attributeTexts: readonly string[];
    previous: CaptureManifest | null;
  },
): Promise<KeptLfsObjects> {
  if (!opts.attributeTexts.some((text) => filterDriversNamed(text).includes("lfs"))) return NONE;
  const base = opts.head ? await git.run(treeOf(opts.head)) : await git.run(emptyTree());
  const changed = (await git.run(changedFilesBetween(base, opts.tree))).filter(
    (f): f is typeof f & { oid: string } => f.oid !== null && REGULAR_FILE.test(f.mode),
  );
  const pointers = await lfsPointersAmong(
    git,
    changed.map((f) => f.oid),
  );
  const pathOf = new Map<string, { path: string; pointer: LfsPointer }>();
  for (const file of changed) {
    const pointer = pointers.get(file.oid);
    if (pointer && !pathOf.has(pointer.oid)) pathOf.set(pointer.oid, { path: file.path, pointer });
  }
  if (pathOf.size === 0) return NONE;

  const known = new Set((opts.previous?.lfsObjects ?? []).map((o) => o.oid));
  const kept: KeptLfsObjects = { entries: [], artifacts: new Map() };
  for (const [oid, { path, pointer }] of [...pathOf].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (known.has(oid)) {
      kept.entries.push({ oid, size: pointer.size });
      continue;
    }
    const bytes = await contentOf(opts.commonDir, opts.root, path, pointer);
    if (!bytes) continue;
    kept.entries.push({ oid, size: pointer.size });
    kept.artifacts.set(oid, bytes);
  }
  return kept;
}
