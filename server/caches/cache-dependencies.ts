// Capturing a checkout's dependency directories as the cache of its envHash, and adding the
// cache of a restored checkout's envHash to it. A cache is reproducible state: a checkout without
// an envHash (no lockfile), without the directories, or whose envHash has no cache simply gets
// none, and says so.
import { join } from "node:path";
import { lstat } from "node:fs/promises";
import { backendFor } from "../backends/registry.ts";
import { isStrataError } from "../domain/errors.ts";
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

/**
 * Adds the cache of `envHash` (of the repository of snapshot `snapshotId`) to the restored checkout at `into`: `none` when there is no cache
 * for it, `present` when the checkout has the directories already, `failed` (the checkout is left
 * as it was) when the cache cannot be restored.
 */
export async function restoreDependencies(
  port: Pick<DependencyCachePort, "find" | "store">,
  opts: { into: string; snapshotId: string; envHash: string | null; stateDir: string; signal?: AbortSignal },
): Promise<CacheRestoreResult> {
  if (!opts.envHash) return { status: "none", envHash: null, reason: "the snapshot has no envHash" };
  const { exact } = await port.find({ snapshotId: opts.snapshotId, envHash: opts.envHash });
  if (!exact) return { status: "none", envHash: opts.envHash, reason: "no dependency cache for this envHash" };
  for (const path of exact.paths) {
    if (await lstat(join(opts.into, path)).catch(() => null)) {
      return { status: "present", envHash: opts.envHash, reason: `${path} is in the checkout already` };
    }
  }
  let outcome;
  try {
    outcome = await backendFor(exact.kind).restore(exact.ref, opts.into, {
      source: port.store,
      stateDir: opts.stateDir,
      mode: "add",
      signal: opts.signal,
    });
  } catch (error) {
    if (!isStrataError(error)) throw error;
    return { status: "failed", envHash: opts.envHash, reason: `${error.code}: ${error.message}` };
  }
  if (outcome.status === "unrestored") {
    return { status: "failed", envHash: opts.envHash, reason: `${outcome.error.code}: ${outcome.error.message}` };
  }
  return {
    status: outcome.status,
    envHash: opts.envHash,
    ref: exact.ref,
    paths: exact.paths,
    missing: outcome.status === "degraded" ? outcome.missing.paths : [],
  };
}
