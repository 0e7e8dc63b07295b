// The `git` backend: a checkout's HEAD, branch, dirty and untracked files and unpushed commits,
// captured through a private index and restored verified to the git tree id (server/capture/engine, server/restore/engine). Its
// artifact is the capture's full manifest, stored as a blob; the patches, files and bundle it
// names are blobs beside it.
import { createHash } from "node:crypto";
import {
  canonicalManifestBytes,
  captureManifestSchema,
  manifestBlobDigests,
  manifestContentBytes,
  type CaptureManifest,
} from "../domain/capture-manifest.ts";
import { StrataError } from "../domain/errors.ts";
import { missingEntries } from "../domain/restore-result.ts";
import { captureCheckout } from "../capture/engine/capture.ts";
import { restoreWorktree } from "../restore/engine/restore.ts";
import type { BlobSource } from "../restore/engine/restore-blobs.ts";
import { goneArtifact, type SnapshotBackend } from "./backend.ts";
import { readWhole, recordOrGone, removeRecord } from "./content-store.ts";
import { unrestoredOn } from "./unrestored.ts";

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The manifest a reference names: BLOB_MISSING, BLOB_CORRUPT or INVALID_SNAPSHOT otherwise. */
async function readManifest(source: BlobSource, ref: string, signal?: AbortSignal): Promise<unknown> {
  const bytes = await readWhole(source, ref, signal);
  if (sha256(bytes) !== ref) {
    throw new StrataError("BLOB_CORRUPT", `The manifest ${ref} does not have its digest.`, { data: { digest: ref } });
  }
  try {
    return JSON.parse(bytes.toString("utf8")) as unknown;
  } catch {
    throw new StrataError("INVALID_SNAPSHOT", `The git snapshot ${ref} has no readable manifest.`, { data: { ref } });
  }
}

/** A stable uuid for an artifact the catalog did not name (recorded in the restored checkout). */
function uuidOf(ref: string): string {
  const hex = sha256(Buffer.from(`strata artifact ${ref}`));
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export const gitBackend: SnapshotBackend = {
  kind: "git",
  capabilities: { snapshots: true, idlePersistentHolds: false, dependencyCaches: false },

  async capture(workspace, ctx) {
    let previous: CaptureManifest | null = null;
    if (ctx.previous) {
      const parsed = captureManifestSchema.safeParse(await readManifest(ctx.store, ctx.previous, ctx.signal));
      // A previous capture that cannot be read is simply not built upon: this one is full.
      previous = parsed.success ? parsed.data : null;
    }
    const result = await captureCheckout(workspace, {
      previous,
      cacheDir: ctx.cacheDir,
      signal: ctx.signal,
      snapshotRef: null,
    });
    if (result.outcome === "unavailable") throw result.error;
    const omitted = result.manifest.omitted.map((o) => ({ path: o.path, reason: o.reason }));
    if (result.outcome === "unchanged") {
      const sizeBytes = manifestContentBytes(result.manifest);
      return { outcome: "unchanged", ref: ctx.previous!, sizeBytes, uploaded: { blobs: 0, bytes: 0 }, omitted };
    }
    const bytes = canonicalManifestBytes(result.manifest);
    const ref = sha256(bytes);
    const content = new Map(result.artifacts);
    content.set(ref, bytes);
    const uploaded = { blobs: 0, bytes: 0 };
    for (const digest of await ctx.store.missing([...content.keys()])) {
      const piece = content.get(digest)!;
      await ctx.store.put(digest, piece);
      uploaded.blobs += 1;
      uploaded.bytes += piece.length;
    }
    return {
      outcome: "captured",
      ref,
      sizeBytes: manifestContentBytes(result.manifest) + bytes.length,
      uploaded,
      omitted,
    };
  },

  async restore(ref, into, ctx) {
    return unrestoredOn(async () => {
      const manifest = await readManifest(ctx.source, ref, ctx.signal);
      const report = await restoreWorktree({ snapshotId: ctx.snapshotId ?? uuidOf(ref), manifest }, into, {
        blobs: ctx.source,
        stateDir: ctx.stateDir,
        exactOnly: ctx.exactOnly,
        signal: ctx.signal,
      });
      const { result } = report;
      if (result.status === "unrestored" || !report.path || !result.holds.tree) {
        const code = result.missing.cause ?? "INVALID_SNAPSHOT";
        return {
          status: "unrestored",
          error: new StrataError(code, result.missing.causeMessage ?? "Nothing was restored."),
        };
      }
      if (result.status === "restored") {
        return { status: "restored", path: report.path, verified: result.holds.tree, detail: result };
      }
      return {
        status: "degraded",
        path: report.path,
        verified: result.holds.tree,
        missing: {
          paths: result.missing.paths,
          pathsComplete: result.missing.pathsComplete,
          entries: missingEntries(result),
          cause: result.missing.cause,
          message: result.missing.causeMessage,
        },
        detail: result,
      };
    });
  },

  delete: removeRecord,

  async describe(ref, ctx) {
    const manifest = await recordOrGone(async () => captureManifestSchema.parse(await readManifest(ctx.source, ref)));
    if (!manifest) return goneArtifact("git", ref);
    const at = manifest.head ? manifest.head.slice(0, 12) : "no commit";
    const on = manifest.branch ? ` on ${manifest.branch}` : " (detached)";
    const changes = manifest.patches.length > 0 ? `, ${manifest.patches.length} change sets` : ", clean";
    const unpushed = manifest.bundle ? `, ${manifest.bundle.commits.length} unpushed commits` : "";
    return {
      kind: "git",
      ref,
      exists: true,
      sizeBytes: manifestContentBytes(manifest),
      files: null,
      capturedAt: manifest.capturedAt,
      summary: `git checkout at ${at}${on}${changes}${unpushed}`,
    };
  },

  async content(ref, ctx) {
    const manifest = captureManifestSchema.parse(await readManifest(ctx.source, ref));
    return { digests: [...new Set([ref, ...manifestBlobDigests(manifest)])], base: null };
  },
};
