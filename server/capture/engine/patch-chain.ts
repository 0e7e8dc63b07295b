// The patch chain: a full patch from HEAD, then incremental patches from the previous capture's
// tree, restarting from HEAD every `fullEvery` links, whenever HEAD moved, and whenever the
// previous tree is no longer in the repository.
//
// A patch carries text changes as diffs and every binary or large file whole (commands.ts,
// WHOLE_FILE_THRESHOLD_BYTES): the patch names the file's object, whose content is stored as a
// blob of its own and listed on the link (`files`); a restore writes those objects before it
// applies the patch.
import { createHash, randomUUID } from "node:crypto";
import type { CaptureManifest, PatchLink, WholeFile } from "../../domain/capture-manifest.ts";
import { isStrataError } from "../../domain/errors.ts";
import { blobContents, indexPatch, treePatch, wholeFilesInPatch } from "../../git/commands.ts";
import type { GitRunner } from "../../git/runner.ts";

export interface ChainPlan {
  kind: "full" | "incremental";
  /** What the new patch applies to: HEAD's commit (full) or the previous capture's tree. */
  base: string;
  /** The links kept from the previous capture (empty for a full restart). */
  kept: PatchLink[];
}

/** Which kind of patch the next capture makes. Pure. */
export function planPatchChain(opts: {
  previous: CaptureManifest | null;
  /** HEAD's commit, or the empty tree on an unborn branch. */
  headBase: string;
  head: string | null;
  fullEvery: number;
}): ChainPlan {
  const { previous } = opts;
  const incremental =
    previous !== null &&
    previous.head === opts.head &&
    previous.patches.length > 0 &&
    previous.patches.length < opts.fullEvery;
  if (incremental) return { kind: "incremental", base: previous.tree, kept: previous.patches };
  return { kind: "full", base: opts.headBase, kept: [] };
}

/** A patch made, waiting for the id of the tree it leads to. */
export interface PendingPatch {
  plan: ChainPlan;
  bytes: Buffer;
  /** The content of each file the patch carries whole, by object id. */
  files: Map<string, Buffer>;
}

export interface ChainOutcome {
  patches: PatchLink[];
  /** The new patch and the files it carries whole, by sha256; empty when the chain did not grow. */
  artifacts: { digest: string; bytes: Buffer }[];
}

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * Makes the next patch, to a tree or to what an index holds. An incremental patch whose base
 * was pruned from the repository becomes a full one.
 */
export async function makePatch(
  git: GitRunner,
  opts: {
    previous: CaptureManifest | null;
    head: string | null;
    headBase: string;
    fullEvery: number;
    maxBytes: number;
    to: { tree: string } | { indexFile: string };
  },
): Promise<PendingPatch> {
  const run = async (plan: ChainPlan): Promise<PendingPatch> => {
    const bytes = await git.run(
      "tree" in opts.to
        ? treePatch(plan.base, opts.to.tree, opts.maxBytes)
        : indexPatch(opts.to.indexFile, plan.base, opts.maxBytes),
    );
    const whole = wholeFilesInPatch(bytes);
    const files = whole.length > 0 ? await git.run(blobContents(whole, opts.maxBytes)) : new Map<string, Buffer>();
    return { plan, bytes, files };
  };
  const plan = planPatchChain(opts);
  if ("tree" in opts.to && plan.base === opts.to.tree) return { plan, bytes: Buffer.alloc(0), files: new Map() };
  try {
    return await run(plan);
  } catch (error) {
    if (plan.kind !== "incremental" || !isStrataError(error, "GIT_FAILED")) throw error;
    return run(planPatchChain({ ...opts, previous: null }));
  }
}

/** The chain once the tree is known. An empty patch adds no link. */
export function completeChain(pending: PendingPatch, tree: string): ChainOutcome {
  const { plan, bytes } = pending;
  if (bytes.length === 0) return { patches: plan.kept, artifacts: [] };
  const digest = sha256(bytes);
  const artifacts = [{ digest, bytes }];
  const files: WholeFile[] = [];
  for (const [oid, content] of [...pending.files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const file = { oid, digest: sha256(content), size: content.length };
    files.push(file);
    artifacts.push({ digest: file.digest, bytes: content });
  }
  const link: PatchLink = {
    uuid: randomUUID(),
    parent: plan.kept.at(-1)?.uuid ?? null,
    digest,
    size: bytes.length,
    kind: plan.kind,
    base: plan.base,
    tree,
    ...(files.length > 0 ? { files } : {}),
  };
  return { patches: [...plan.kept, link], artifacts };
}
