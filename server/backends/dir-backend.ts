// The `dir` backend: a whole directory, ignored dependency and build caches included, git
// repository or not (backends/dir).
import { parseDirManifest } from "../domain/dir-manifest.ts";
import { goneArtifact, type SnapshotBackend } from "./backend.ts";
import { readWhole, recordOrGone, removeRecord } from "./content-store.ts";
import { captureDir } from "./dir/dir-capture.ts";
import { recordContent } from "./dir/dir-chain.ts";
import { restoreDir } from "./dir/dir-restore.ts";
import { unrestoredOn } from "./unrestored.ts";

export const dirBackend: SnapshotBackend = {
  kind: "dir",
  capabilities: { snapshots: true, idlePersistentHolds: false, dependencyCaches: true },

  async capture(workspace, ctx) {
    const result = await captureDir(workspace, {
      store: ctx.store,
      parent: ctx.previous ?? null,
      include: ctx.include,
      cacheDir: ctx.cacheDir,
      signal: ctx.signal,
    });
    return {
      outcome: result.outcome,
      ref: result.ref,
      sizeBytes: result.sizeBytes,
      uploaded: result.uploaded,
      omitted: result.omitted,
    };
  },

  async restore(ref, into, ctx) {
    return unrestoredOn(async () => {
      const report = await restoreDir(ref, into, {
        source: ctx.source,
        stateDir: ctx.stateDir,
        exactOnly: ctx.exactOnly,
        signal: ctx.signal,
      });
      if (report.status === "restored") {
        return { status: "restored", path: report.path, verified: report.stateDigest, detail: report };
      }
      return {
        status: "degraded",
        path: report.path,
        verified: report.stateDigest,
        missing: {
          paths: report.missing.paths,
          pathsComplete: true,
          entries: report.missing.paths.map((path) => `path:${path}`),
          cause: report.missing.cause,
          message: report.missing.message,
        },
        detail: report,
      };
    });
  },

  delete: removeRecord,

  async describe(ref, ctx) {
    const record = await recordOrGone(async () => parseDirManifest(await readWhole(ctx.source, ref)));
    if (!record) return goneArtifact("dir", ref);
    const layered = record.parent ? `, ${record.entries.length} changed on ${record.depth} earlier` : "";
    const omitted = record.omitted.length > 0 ? `, ${record.omitted.length} left out` : "";
    return {
      kind: "dir",
      ref,
      exists: true,
      sizeBytes: record.sizeBytes,
      files: record.files,
      capturedAt: record.capturedAt,
      summary: `directory of ${record.files} files${layered}${omitted}`,
    };
  },

  content: (ref, ctx) => recordContent(ctx.source, ref, ctx.known),
};
