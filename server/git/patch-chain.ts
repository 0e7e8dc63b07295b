// The patch chain: a full binary patch from HEAD, then incremental patches from the previous
// capture's tree, restarting from HEAD every `fullEvery` links, whenever HEAD moved, and
// whenever the previous tree is no longer in the repository.
import { createHash, randomUUID } from "node:crypto";
import type { CaptureManifest, PatchLink } from "../domain/capture-manifest.ts";
import { isStrataError } from "../domain/errors.ts";
import { indexPatch, treePatch } from "./commands.ts";
import type { GitRunner } from "./runner.ts";

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
}

export interface ChainOutcome {
  patches: PatchLink[];
  /** The new patch's bytes, or null when the chain did not grow. */
  artifact: { digest: string; bytes: Buffer } | null;
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
  const run = (base: string) =>
    git.run(
      "tree" in opts.to
        ? treePatch(base, opts.to.tree, opts.maxBytes)
        : indexPatch(opts.to.indexFile, base, opts.maxBytes),
    );
  const plan = planPatchChain(opts);
  if ("tree" in opts.to && plan.base === opts.to.tree) return { plan, bytes: Buffer.alloc(0) };
  try {
    return { plan, bytes: await run(plan.base) };
  } catch (error) {
    if (plan.kind !== "incremental" || !isStrataError(error, "GIT_FAILED")) throw error;
    const full = planPatchChain({ ...opts, previous: null });
    return { plan: full, bytes: await run(full.base) };
  }
}

/** The chain once the tree is known. An empty patch adds no link. */
export function completeChain(pending: PendingPatch, tree: string): ChainOutcome {
  const { plan, bytes } = pending;
  if (bytes.length === 0) return { patches: plan.kept, artifact: null };
  const digest = createHash("sha256").update(bytes).digest("hex");
  const link: PatchLink = {
    uuid: randomUUID(),
    parent: plan.kept.at(-1)?.uuid ?? null,
    digest,
    size: bytes.length,
    kind: plan.kind,
    base: plan.base,
    tree,
  };
  return { patches: [...plan.kept, link], artifact: { digest, bytes } };
}
