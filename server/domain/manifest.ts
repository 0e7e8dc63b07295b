// What a capture recorded, as far as the catalog needs it here: the tree, the head, the branch
// and the digests of the blobs it consists of. The bytes themselves live elsewhere.
import { createHash } from "node:crypto";
import { z } from "zod";
import { blobDigestSchema } from "./content.ts";
import { objectIdSchema } from "./snapshot-keys.ts";

export const manifestSchema = z.strictObject({
  /** The git tree id of the captured worktree (what a restore is verified against). */
  treeId: objectIdSchema,
  /** HEAD at capture. */
  head: objectIdSchema,
  /** The checked-out branch, or null when HEAD is detached. */
  branch: z.string().trim().min(1).max(250).nullable(),
  blobDigests: z.array(blobDigestSchema).max(100_000),
  sizeBytes: z.number().int().nonnegative().default(0),
  /**
   * Set by a capture in a partly restored worktree: the snapshot it could not fully restore,
   * which stays the checkout's restore target while that partial restore is held.
   */
  degradedFrom: z.string().trim().min(1).max(200).nullable().optional(),
});
export type Manifest = z.infer<typeof manifestSchema>;

/** The blob digests as a set: order and repetition carry no meaning. */
export function normalizeBlobDigests(digests: readonly string[]): string[] {
  return [...new Set(digests)].sort();
}

/** A stable digest of the manifest, so a retried capture is recognized as the same one. */
export function manifestDigest(manifest: Manifest): string {
  const canonical = JSON.stringify([
    manifest.treeId,
    manifest.head,
    manifest.branch,
    normalizeBlobDigests(manifest.blobDigests),
    manifest.sizeBytes,
  ]);
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}
