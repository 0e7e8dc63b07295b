// What one capture of a git checkout recorded, in full: enough to rebuild the working tree on
// another machine and to tell what was left out. Stored as an immutable content-addressed blob;
// the catalog row keeps the short form (`Manifest` in manifest.ts) and the digest.
import { createHash } from "node:crypto";
import { z } from "zod";
import { blobDigestSchema } from "./content.ts";
import { objectIdSchema } from "./snapshot-keys.ts";

const OMISSION_REASONS = [
  /** Untracked and matched by .gitignore, info/exclude or the global excludes file. */
  "ignored",
  /** Matched by .strata/snapshot-ignore. */
  "snapshot-ignore",
  /** On the built-in secret deny-list. */
  "denied",
  /** Untracked, and untracked capture is off. */
  "untracked",
  /** Larger than maxFileBytes. */
  "too-large",
  /** Beyond maxSnapshotBytes in total. */
  "snapshot-too-large",
  /** A repository inside the checkout that is not a submodule. */
  "nested-repository",
  /** A submodule with uncommitted changes or untracked files. */
  "submodule-changes",
  /** A submodule whose checked-out commit is on none of its remote-tracking refs. */
  "unpushed-submodule-commit",
  /** A submodule that could not be checked in time. */
  "submodule-unchecked",
  /** An unpushed commit touches a denied path, so the bundle was left out. */
  "unpushed-denied",
  /** The bundle of unpushed commits was larger than maxSnapshotBytes. */
  "bundle-too-large",
] as const;
export type OmissionReason = (typeof OMISSION_REASONS)[number];

/** Reasons about the bundle of commits rather than about files of the tree. */
export const BUNDLE_OMISSIONS: ReadonlySet<OmissionReason> = new Set(["unpushed-denied", "bundle-too-large"]);

const omittedEntrySchema = z.object({
  /** Repository-relative; a directory ends with "/". */
  path: z.string().min(1).max(4096),
  reason: z.enum(OMISSION_REASONS),
  detail: z.string().max(500).optional(),
  /** For unpushed-denied and bundle-too-large: the commits concerned. */
  commits: z.array(objectIdSchema).max(10_000).optional(),
});
export type OmittedEntry = z.infer<typeof omittedEntrySchema>;

/**
 * A changed file a patch carries whole, as a blob of its own, instead of as a binary delta: git
 * treats it as binary, or it is larger than 1 MiB (server/capture/engine/patch-chain.ts). The patch names
 * it by object id ("Binary files … differ" after a full index line); a restore writes the blob
 * into its object store before applying the patch, which then takes the object as it is.
 */
const wholeFileSchema = z.object({
  /** The git blob id the patch gives the file. */
  oid: objectIdSchema,
  /** The sha256 of the blob's content, stored as a blob of the catalog. */
  digest: blobDigestSchema,
  size: z.number().int().nonnegative(),
});
export type WholeFile = z.infer<typeof wholeFileSchema>;

const patchLinkSchema = z.object({
  uuid: z.uuid(),
  /** The previous patch of the chain; null for a full patch. */
  parent: z.uuid().nullable(),
  digest: blobDigestSchema,
  size: z.number().int().nonnegative(),
  /** `full`: against HEAD's tree; `incremental`: against the previous capture's tree. */
  kind: z.enum(["full", "incremental"]),
  /** What the patch applies to: HEAD's commit (full; the empty tree on an unborn branch) or the previous capture's tree. */
  base: objectIdSchema,
  /** The tree applying it produces. */
  tree: objectIdSchema,
  /** The files the patch carries whole (absent when none). */
  files: z.array(wholeFileSchema).max(100_000).optional(),
});
export type PatchLink = z.infer<typeof patchLinkSchema>;

/**
 * A file whose recorded blob git does not read back from its own checkout: the repository's
 * attributes convert line endings (`text`, `eol`) and the blob still has a CRLF, so a restore
 * writes the file's bytes verbatim instead of checking the blob out (server/capture/engine/verbatim-files.ts).
 */
const verbatimFileSchema = z.object({
  /** Repository-relative path of a regular file of the tree. */
  path: z.string().min(1).max(4096),
  /** The blob the tree records for it. */
  oid: objectIdSchema,
  /** The line-ending attributes that applied when it was captured, e.g. `text eol=lf`. */
  attributes: z.string().max(200),
  /**
   * The worktree's bytes, stored as a blob (sha256, size), when they are not the blob's own
   * content; absent when the file holds the blob's content as it is (or was left out).
   */
  bytes: z.object({ digest: blobDigestSchema, size: z.number().int().nonnegative() }).optional(),
});
export type VerbatimFile = z.infer<typeof verbatimFileSchema>;

/**
 * The Git LFS object of a file that differs from HEAD, stored as a blob of its own: its LFS oid
 * is the sha256 of its content, so it is also its digest in the catalog. No remote can be
 * expected to have it (git lfs pushes objects with commits), so the capture keeps it
 * (server/capture/engine/capture-lfs.ts) and a restore places it before it asks the remotes for the rest.
 */
const lfsObjectSchema = z.object({
  oid: blobDigestSchema,
  size: z.number().int().nonnegative(),
});
export type LfsObject = z.infer<typeof lfsObjectSchema>;

const bundleRecordSchema = z.object({
  /** The bundle's layer; a bundle reused by a later capture keeps its uuid. */
  uuid: z.uuid(),
  digest: blobDigestSchema,
  size: z.number().int().nonnegative(),
  /** The unpushed commits it carries, newest first. */
  commits: z.array(objectIdSchema).min(1).max(100_000),
});
export type BundleRecord = z.infer<typeof bundleRecordSchema>;

export const captureManifestSchema = z.object({
  version: z.literal(1),
  /** The checkout's path on the recording machine (informational). */
  root: z.string().min(1).max(4096),
  objectFormat: z.enum(["sha1", "sha256"]),
  remotes: z.array(z.object({ name: z.string().min(1).max(250), url: z.string().max(4096) })).max(100),
  branch: z.string().min(1).max(250).nullable(),
  /** Null on an unborn branch (no commit yet). */
  head: objectIdSchema.nullable(),
  tree: objectIdSchema,
  /** From the last full patch to this capture, in order of application. Empty when tree = HEAD's. */
  patches: z.array(patchLinkSchema).max(1000),
  bundle: bundleRecordSchema.nullable(),
  omitted: z.array(omittedEntrySchema).max(100_000),
  /** Files a restore writes verbatim, sorted by path (absent when there are none). */
  verbatim: z.array(verbatimFileSchema).max(100_000).optional(),
  /** LFS objects of files changed since HEAD, sorted by oid (absent when there are none). */
  lfsObjects: z.array(lfsObjectSchema).max(100_000).optional(),
  filters: z.object({
    autocrlf: z.string().max(20).nullable(),
    eol: z.string().max(20).nullable(),
    drivers: z
      .array(z.object({ name: z.string().min(1).max(200), configured: z.boolean(), required: z.boolean() }))
      .max(100),
  }),
  envHash: blobDigestSchema.nullable(),
  envFiles: z.array(z.string().max(200)).max(100),
  /** The commit of the tree under refs/strata/snapshots/…, when one was written. */
  snapshotRef: z.object({ name: z.string().min(1).max(1000), commit: objectIdSchema }).nullable(),
  /** The snapshot the checkout was restored from only partly, when it was. */
  degradedFrom: z.string().min(1).max(200).nullable().optional(),
  capturedAt: z.iso.datetime(),
});
export type CaptureManifest = z.infer<typeof captureManifestSchema>;

/** The worktree bytes a manifest stores for files written verbatim. */
function verbatimBytes(manifest: CaptureManifest): { digest: string; size: number }[] {
  return (manifest.verbatim ?? []).flatMap((f) => (f.bytes ? [f.bytes] : []));
}

/** The blobs a manifest stores beside its patches and bundle: verbatim bytes, LFS objects. */
function storedFiles(manifest: CaptureManifest): { digest: string; size: number }[] {
  const lfs = (manifest.lfsObjects ?? []).map((o) => ({ digest: o.oid, size: o.size }));
  return [...verbatimBytes(manifest), ...lfs];
}

/**
 * Every blob a manifest needs: its patches, the files they carry whole, its bundle, the bytes
 * of files written verbatim, and the LFS objects of changed files.
 */
export function manifestBlobDigests(manifest: CaptureManifest): string[] {
  const digests = manifest.patches.flatMap((p) => [p.digest, ...(p.files ?? []).map((f) => f.digest)]);
  if (manifest.bundle) digests.push(manifest.bundle.digest);
  digests.push(...storedFiles(manifest).map((b) => b.digest));
  return [...new Set(digests)];
}

/** The content size a manifest's blobs add up to. */
export function manifestContentBytes(manifest: CaptureManifest): number {
  const files = (p: PatchLink) => (p.files ?? []).reduce((sum, f) => sum + f.size, 0);
  const stored = storedFiles(manifest).reduce((sum, b) => sum + b.size, 0);
  return manifest.patches.reduce((sum, p) => sum + p.size + files(p), 0) + (manifest.bundle?.size ?? 0) + stored;
}

/** The files written verbatim, as the "unchanged" test compares them (path and blob). */
export function verbatimFilesDigest(files: readonly Pick<VerbatimFile, "path" | "oid">[] | undefined): string {
  const canonical = JSON.stringify((files ?? []).map((f) => [f.path, f.oid]));
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

function byPathThenReason(a: OmittedEntry, b: OmittedEntry): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0;
}

export function sortOmitted(entries: readonly OmittedEntry[]): OmittedEntry[] {
  return [...entries].sort(byPathThenReason);
}

/**
 * A digest of the files a capture left out (path and reason), the third part of the
 * "unchanged" test next to HEAD and the tree. Bundle omissions are about commits, not files.
 */
export function omittedFilesDigest(entries: readonly OmittedEntry[]): string {
  const files = sortOmitted(entries.filter((e) => !BUNDLE_OMISSIONS.has(e.reason)));
  const canonical = JSON.stringify(files.map((e) => [e.path, e.reason]));
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

/** The canonical bytes a manifest is stored as, and so the digest it is known by. */
export function canonicalManifestBytes(manifest: CaptureManifest): Buffer {
  return Buffer.from(JSON.stringify(captureManifestSchema.parse(manifest)), "utf8");
}
