// Capturing a checkout's dependency directories as the cache of its envHash, and adding the
// cache of a restored checkout's envHash to it. A cache is reproducible state: a checkout without
// an envHash (no lockfile), without the directories, or whose envHash has no cache simply gets
// none, and says so.
import { join } from "node:path";
import { lstat, readdir, rename } from "node:fs/promises";
import { backendFor } from "../backends/registry.ts";
import type { BackendRestoreOutcome } from "../backends/backend.ts";
import { isStrataError, type StrataError } from "../domain/errors.ts";
import { createStaging } from "../restore/engine/restore-staging.ts";
import type { DependencyCachePort } from "./dependency-port.ts";

export type CacheCaptureResult =
  | {
      outcome: "published" | "unchanged";
      envHash: string;
      ref: string;
      paths: string[];
      uploaded: { blobs: number; bytes: number };
      omitted: { path: string; reason: string }[];
    }
  | { outcome: "skipped"; reason: string };

/**
 * Captures `paths` of the checkout at `root` (those that exist) with the `dir` backend, layered
 * on the repository's latest cache, and publishes it as the cache of `envHash`.
 */
export async function captureDependencies(
  port: DependencyCachePort,
  opts: {
    root: string;
    repository: { identity: string };
    envHash: string | null;
    paths: readonly string[];
    cacheDir?: string;
    signal?: AbortSignal;
  },
): Promise<CacheCaptureResult> {
  if (!opts.envHash)
    return { outcome: "skipped", reason: "the checkout has no lockfile or toolchain file (no envHash)" };
  const present: string[] = [];
  for (const path of opts.paths) if (await lstat(join(opts.root, path)).catch(() => null)) present.push(path);
  if (present.length === 0)
    return { outcome: "skipped", reason: `none of ${opts.paths.join(", ")} is in the checkout` };
  const backend = backendFor("dir");
  const { exact, latest } = await port.find({ repository: opts.repository, envHash: opts.envHash });
  const base = exact ?? latest;
  const captured = await backend.capture(opts.root, {
    store: port.store,
    previous: base?.kind === backend.kind ? base.ref : null,
    include: present,
    cacheDir: opts.cacheDir,
    signal: opts.signal,
  });
  const published = await port.publish({
    repository: opts.repository,
    envHash: opts.envHash,
    paths: present,
    artifact: { kind: backend.kind, ref: captured.ref, sizeBytes: captured.sizeBytes },
  });
  return {
    outcome: published.outcome,
    envHash: opts.envHash,
    ref: captured.ref,
    paths: present,
    uploaded: captured.uploaded,
    omitted: captured.omitted,
  };
}

export type CacheRestoreResult =
  | { status: "restored" | "degraded"; envHash: string; ref: string; paths: string[]; missing: string[] }
  | { status: "none" | "present" | "failed"; envHash: string | null; reason: string };

/** A cache being restored beside a checkout that is being restored too. */
export interface PreparedDependencies {
  /** Moves the restored directories into the checkout at `into` (or says why not) and tidies up. */
  place(into: string): Promise<CacheRestoreResult>;
  /** Drops what was restored (the checkout was not). */
  discard(): Promise<void>;
}

function failed(envHash: string, error: StrataError): CacheRestoreResult {
  return { status: "failed", envHash, reason: `${error.code}: ${error.message}` };
}

/**
 * Starts restoring the cache of `envHash` (of the repository of snapshot `snapshotId`) into a
 * staging directory next to `target`, verified there, while the checkout itself is restored;
 * `place` then moves its top-level directories into the checkout. `none` when there is no cache
 * for the envHash, `present` when the checkout has the directories already, `failed` (the
 * checkout is left as it was) when the cache cannot be restored.
 */
export async function prepareDependencies(
  port: Pick<DependencyCachePort, "find" | "store">,
  opts: { target: string; snapshotId: string; envHash: string | null; stateDir: string; signal?: AbortSignal },
): Promise<PreparedDependencies> {
  const settled = (result: CacheRestoreResult): PreparedDependencies => ({
    place: async () => result,
    discard: async () => undefined,
  });
  const envHash = opts.envHash;
  if (!envHash) return settled({ status: "none", envHash: null, reason: "the snapshot has no envHash" });
  const { exact } = await port.find({ snapshotId: opts.snapshotId, envHash });
  if (!exact) return settled({ status: "none", envHash, reason: "no dependency cache for this envHash" });

  const staging = await createStaging(`${opts.target}.deps`, opts.stateDir);
  let outcome: BackendRestoreOutcome;
  try {
    outcome = await backendFor(exact.kind).restore(exact.ref, staging.dir, {
      source: port.store,
      stateDir: opts.stateDir,
      signal: opts.signal,
    });
  } catch (error) {
    await staging.discard();
    if (!isStrataError(error)) throw error;
    return settled(failed(envHash, error));
  }
  if (outcome.status === "unrestored") {
    await staging.discard();
    return settled(failed(envHash, outcome.error));
  }
  const restored = outcome;
  return {
    async place(into) {
      const moved: string[] = [];
      try {
        for (const top of await readdir(staging.dir)) {
          // The checkout has it already: it keeps its own, and nothing of the cache is added.
          if (await lstat(join(into, top)).catch(() => null)) {
            for (const back of moved) await rename(join(into, back), join(staging.dir, back));
            return { status: "present", envHash, reason: `${top} is in the checkout already` };
          }
          await rename(join(staging.dir, top), join(into, top));
          moved.push(top);
        }
        return {
          status: restored.status,
          envHash,
          ref: exact.ref,
          paths: exact.paths,
          missing: restored.status === "degraded" ? restored.missing.paths : [],
        };
      } finally {
        await staging.discard();
      }
    },
    discard: () => staging.discard(),
  };
}
