// Restoring a snapshot of the catalog into a directory, and acquiring a workspace and restoring
// what the decision chose in one step. The catalog is a port, so the same steps run against a
// local database or a Strata server over HTTP (client/restore-port.ts):
//
//   the snapshot's row (agent-scoped) → its full manifest (a blob) → restoreWorktree → the
//   outcome reported with workspace.reportRestore when the restore belongs to an acquire.
import { createHash, randomUUID } from "node:crypto";
import { resolve } from "node:path";
import type { Db } from "../db/client.ts";
import { isStrataError, StrataError } from "../domain/errors.ts";
import { missingEntries, type RestoreResult } from "../domain/restore-result.ts";
import type { AgentScope } from "../domain/scope.ts";
import type { ReportRestoreResult, RestorePlan, SnapshotRef } from "../domain/views.ts";
import { blobMissing, type BlobSource } from "./engine/restore-blobs.ts";
import { checkTarget } from "./engine/restore-staging.ts";
import { restoreWorktree, type RestoreOptions, type RestoreReport } from "./engine/restore.ts";
import { readBlob, statGrantedBlob } from "../content/blobs.ts";
import { pinSnapshot, releasePin } from "../content/pins.ts";
import { getSnapshot } from "../lineage/snapshots.ts";
import { acquireWorkspace, type AcquireWorkspaceInput } from "../acquire/acquire-workspace.ts";
import { reportRestore, type ReportRestoreInput } from "./report-restore.ts";
import { prepareDependencies, type CacheRestoreResult } from "../caches/cache-dependencies.ts";
import { backendFor } from "../backends/registry.ts";
import type { ProviderSettings } from "../backends/providers.ts";
import { localDependencyPort, type DependencyCachePort } from "../caches/dependency-port.ts";

/** What restoring needs from a catalog, acting as one agent. */
export interface RestorePort extends BlobSource {
  /** One of the agent's snapshots; NOT_FOUND otherwise. */
  getSnapshot(snapshotId: string): Promise<SnapshotRef>;
  acquire(input: Omit<AcquireWorkspaceInput, "agent">): Promise<RestorePlan>;
  reportRestore(input: ReportRestoreInput): Promise<ReportRestoreResult>;
  /** A usage hold on the snapshot while it is restored (expires on its own). */
  pin(snapshotId: string, pinId: string, expiresInSeconds: number): Promise<void>;
  release(snapshotId: string, pinId: string): Promise<void>;
  /** Dependency caches, where the catalog has them: a restored checkout gets its envHash's. */
  dependencies?: Pick<DependencyCachePort, "find" | "store">;
}

/** The catalog in this process's database (`providers`: STRATA_PROVIDERS, for acquire's decision). */
export function localRestorePort(db: Db, agent: AgentScope, providers?: ProviderSettings): RestorePort {
  return {
    getSnapshot: (snapshotId) => getSnapshot(db, { snapshotId, agent, includeRetired: true }),
    // Only the bytes granted to the agent, as over HTTP: a manifest naming another agent's
    // digests restores none of that agent's content.
    async open(digest) {
      const info = await statGrantedBlob(db, agent.agentId, digest);
      if (!info) throw blobMissing(digest);
      return readBlob(db, info);
    },
    acquire: (input) => acquireWorkspace(db, { ...input, agent, providers }),
    reportRestore: (input) => reportRestore(db, { ...input, agent }),
    async pin(snapshotId, pinId, expiresInSeconds) {
      await pinSnapshot(db, {
        snapshotId,
        pinId,
        expiresInSeconds,
        agentId: agent.agentId,
        holder: `agent:${agent.agentId}`,
        purpose: "restore",
      });
    },
    async release(snapshotId, pinId) {
      await releasePin(db, { snapshotId, pinId, agentId: agent.agentId });
    },
    dependencies: localDependencyPort(db, agent),
  };
}

// --- the record -------------------------------------------------------------------------------------

/** A manifest is small; anything larger is not one. */
const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;

/**
 * Reads a blob that may be a JSON manifest: null as soon as its first bytes show it is not JSON
 * (a patch or a bundle is never read further).
 */
async function readJsonBlob(source: BlobSource, digest: string, signal?: AbortSignal): Promise<unknown> {
  const hash = createHash("sha256");
  const parts: Buffer[] = [];
  let size = 0;
  for await (const piece of await source.open(digest, signal)) {
    if (size === 0) {
      const first = Buffer.from(piece).toString("latin1").trimStart()[0];
      if (first !== "{" && first !== "[") return null;
    }
    size += piece.byteLength;
    if (size > MAX_MANIFEST_BYTES) return null;
    hash.update(piece);
    parts.push(Buffer.from(piece));
  }
  if (hash.digest("hex") !== digest) {
    throw new StrataError("BLOB_CORRUPT", `Blob ${digest} is damaged: its bytes have another sha256.`, {
      data: { digest },
    });
  }
  try {
    return JSON.parse(Buffer.concat(parts, size).toString("utf8")) as unknown;
  } catch {
    return null;
  }
}

function isCaptureManifest(value: unknown, treeId: string | null): boolean {
  const m = value as { version?: unknown; tree?: unknown; patches?: unknown } | null;
  return (
    typeof m === "object" &&
    m !== null &&
    m.version === 1 &&
    Array.isArray(m.patches) &&
    (treeId === null || m.tree === treeId)
  );
}

/**
 * The full manifest of a snapshot. A snapshot names it by `manifestDigest` directly, or through
 * its short catalog form (the blob at `manifestDigest` lists the snapshot's blobs, the full
 * manifest among them, as capture-publish stores it). Throws BLOB_MISSING / BLOB_CORRUPT when
 * the manifest cannot be read, INVALID_SNAPSHOT when the snapshot has none.
 */
export async function loadCaptureManifest(
  source: BlobSource,
  snapshot: SnapshotRef,
  signal?: AbortSignal,
): Promise<{ digest: string; manifest: unknown }> {
  const queue = [snapshot.artifact.ref, snapshot.manifestDigest, ...snapshot.manifest.blobDigests].filter(
    (d): d is string => typeof d === "string" && /^[0-9a-f]{64}$/.test(d),
  );
  const seen = new Set<string>();
  let failure: StrataError | null = null;
  while (queue.length > 0) {
    const digest = queue.shift() ?? "";
    if (seen.has(digest)) continue;
    seen.add(digest);
    let value: unknown;
    try {
      value = await readJsonBlob(source, digest, signal);
    } catch (error) {
      if (isStrataError(error, "BLOB_MISSING") || isStrataError(error, "BLOB_CORRUPT")) {
        failure ??= error;
        continue;
      }
      throw error;
    }
    if (isCaptureManifest(value, snapshot.manifest.treeId)) return { digest, manifest: value };
    // The short form: [treeId, head, branch, blobDigests, sizeBytes].
    if (Array.isArray(value) && Array.isArray(value[3])) {
      for (const d of value[3] as unknown[]) if (typeof d === "string") queue.push(d);
    }
  }
  if (failure) {
    throw new StrataError(failure.code, `The manifest of snapshot ${snapshot.id} cannot be read: ${failure.message}`, {
      hint: "Without its manifest nothing of the snapshot can be restored. Store the manifest blob again.",
      data: failure.data,
    });
  }
  throw new StrataError("INVALID_SNAPSHOT", `Snapshot ${snapshot.id} has no readable manifest.`, {
    hint: "Only snapshots published with their full manifest (a capture) can be restored.",
    data: { field: "manifest" },
  });
}

/** Head commits of the snapshot's predecessors, nearest first (rung b of the degraded ladder). */
async function earlierCommits(port: RestorePort, snapshot: SnapshotRef, limit = 20): Promise<string[]> {
  const commits: string[] = [];
  let next = snapshot.predecessorId;
  for (let i = 0; next && i < limit; i++) {
    let earlier: SnapshotRef;
    try {
      earlier = await port.getSnapshot(next);
    } catch (error) {
      if (isStrataError(error, "NOT_FOUND")) break;
      throw error;
    }
    const head = earlier.manifest.head;
    if (head && head !== snapshot.manifest.head && !commits.includes(head)) commits.push(head);
    next = earlier.predecessorId;
  }
  return commits;
}

// --- restoring one snapshot --------------------------------------------------------------------------

export type RestoreSnapshotOptions = Omit<RestoreOptions, "blobs" | "candidates"> & {
  snapshotId: string;
  into: string;
  /** Hold a pin on the snapshot during the restore (not needed inside an acquire: it pinned). */
  hold?: boolean;
  /** Add the dependency cache of the snapshot's envHash to the restored checkout (default true). */
  dependencies?: boolean;
};

export interface RestoreSnapshotResult extends RestoreReport {
  snapshot: SnapshotRef;
  /** The dependency cache added to the checkout (null when not asked, or nothing was restored). */
  dependencies: CacheRestoreResult | null;
}

/** The envHash a manifest records, if it is one. */
function envHashOf(manifest: unknown): string | null {
  const value = (manifest as { envHash?: unknown } | null)?.envHash;
  return typeof value === "string" && /^[0-9a-f]{64}$/.test(value) ? value : null;
}

const HOLD_SECONDS = 60 * 60;

/** Restores one of the agent's snapshots into `into` (new or empty). */
export async function restoreSnapshot(port: RestorePort, opts: RestoreSnapshotOptions): Promise<RestoreSnapshotResult> {
  const snapshot = await port.getSnapshot(opts.snapshotId);
  const holdId = opts.hold ? `restore-cli:${randomUUID()}` : null;
  if (holdId) {
    await port.pin(snapshot.id, holdId, HOLD_SECONDS).catch((error: unknown) => {
      // A snapshot that takes no new pins (retired…) is still restored while its content lasts.
      if (!isStrataError(error, "PIN_REFUSED")) throw error;
    });
  }
  try {
    // The backend that minted the artifact restores it: UNKNOWN_BACKEND for a kind this host
    // does not have (never another backend in its place).
    if (backendFor(snapshot.artifact.kind).kind !== "git") {
      throw new StrataError(
        "INVALID_SNAPSHOT",
        `Snapshot ${snapshot.id} is a ${snapshot.artifact.kind} artifact, not a checkout.`,
        {
          hint: "Only git snapshots are restored as checkouts in this release.",
          data: { field: "artifact.kind" },
        },
      );
    }
    const { manifest } = await loadCaptureManifest(port, snapshot, opts.signal);
    const candidates = await earlierCommits(port, snapshot);
    // The dependency cache of the snapshot's envHash is restored beside the checkout, at once.
    const preparing =
      opts.dependencies !== false && port.dependencies
        ? prepareDependencies(port.dependencies, {
            target: resolve(opts.into),
            snapshotId: snapshot.id,
            envHash: envHashOf(manifest),
            stateDir: opts.stateDir,
            signal: opts.signal,
          })
        : null;
    // Settled before anything is thrown, so nothing of it is left behind.
    const prepared = preparing?.then(
      (p) => ({ p, error: null }),
      (error: unknown) => ({ p: null, error }),
    );
    let report: RestoreReport;
    try {
      report = await restoreWorktree({ snapshotId: snapshot.id, manifest }, opts.into, {
        ...opts,
        blobs: port,
        candidates,
      });
    } catch (error) {
      await (await prepared)?.p?.discard();
      throw error;
    }
    let dependencies: CacheRestoreResult | null = null;
    const deps = await prepared;
    if (deps?.error) {
      // The checkout is restored; the cache, reproducible state, is only reported missing.
      const reason = deps.error instanceof Error ? deps.error.message : String(deps.error);
      dependencies = { status: "failed", envHash: envHashOf(manifest), reason: reason.slice(0, 500) };
    } else if (deps?.p) {
      if (report.path && report.result.status !== "unrestored") {
        opts.onProgress?.({ phase: "publish", message: "adding the dependency directories of its envHash" });
        dependencies = await deps.p.place(report.path);
      } else await deps.p.discard();
    }
    return { ...report, snapshot, dependencies };
  } finally {
    if (holdId) await port.release(snapshot.id, holdId).catch(() => undefined);
  }
}

// --- acquire, then restore ------------------------------------------------------------------------------

export interface AcquireAndRestoreOptions extends Omit<RestoreOptions, "blobs" | "candidates"> {
  acquire: Omit<AcquireWorkspaceInput, "agent" | "workspace" | "host">;
  into: string;
  host: string;
  /** Add the dependency cache of the restored snapshot's envHash (default true). */
  dependencies?: boolean;
  /**
   * On the live rung: whether the held workspace still is the plan's snapshot. When it is, the
   * task continues there, nothing is restored, and the restore is reported done; otherwise the
   * snapshot is restored into `into` as on the checkpoint rung.
   */
  continueLive?: (plan: RestorePlan) => Promise<boolean>;
}

interface AcquireStep {
  plan: RestorePlan;
  /** What restoring the plan's snapshot gave (null on the cold rung, or when the record was refused). */
  result: RestoreResult | null;
  /** How it was reported: the restore row's outcome. */
  reported: "restored" | "degraded" | "failed";
  error: { code: string; message: string } | null;
  /** The dependency cache added to the restored checkout, when one was looked for. */
  dependencies?: CacheRestoreResult | null;
}

export interface AcquireAndRestoreResult {
  /** Every rung tried, in order; the last one is where the workspace stands. */
  steps: AcquireStep[];
  /** The restored worktree, or null when nothing was written (the cold rung, or no rung left). */
  path: string | null;
  workContextId: string;
}

/** Failures of the snapshot itself, after which the ladder moves to the next rung. */
function isSnapshotFailure(error: unknown): error is StrataError {
  return (
    isStrataError(error, "INVALID_SNAPSHOT") ||
    isStrataError(error, "BLOB_MISSING") ||
    isStrataError(error, "BLOB_CORRUPT")
  );
}

/** What was reported for one rung: how it went, the error of a failed one, and the next plan. */
export type ReportedRung =
  | { reported: "restored" | "degraded"; error: null; next: null }
  | { reported: "failed"; error: { code: string; message: string }; next: RestorePlan | null };

/** Reports a rung that ended with a result: restored, degraded with what is missing, or failed with its cause. */
export async function reportRestoreResult(
  port: RestorePort,
  restoreId: string,
  result: RestoreResult,
): Promise<ReportedRung> {
  const treeId = result.holds.tree ?? undefined;
  if (result.status === "restored") {
    await port.reportRestore({ restoreId, outcome: "restored", treeId });
    return { reported: "restored", error: null, next: null };
  }
  if (result.status === "degraded") {
    await port.reportRestore({
      restoreId,
      outcome: "degraded",
      missing: missingEntries(result),
      treeId,
      detail: result,
    });
    return { reported: "degraded", error: null, next: null };
  }
  const error = {
    code: result.missing.cause ?? "COMMITS_UNAVAILABLE",
    message: (result.missing.causeMessage ?? "Nothing of the snapshot could be restored.").slice(0, 2000),
  };
  const { next } = await port.reportRestore({ restoreId, outcome: "failed", error, detail: result });
  return { reported: "failed", error, next };
}

/** Reports a rung whose restore stopped with a snapshot failure (the ladder's next plan comes back). */
export async function reportRestoreFailure(
  port: RestorePort,
  restoreId: string,
  failure: StrataError,
): Promise<Extract<ReportedRung, { reported: "failed" }>> {
  const error = { code: failure.code, message: failure.message.slice(0, 2000) };
  const { next } = await port.reportRestore({ restoreId, outcome: "failed", error });
  return { reported: "failed", error, next };
}

/**
 * Workspace acquisition and restore in one step, for an agent starting work: the decision
 * (checkpoint, baseline, cold), the restore of the chosen snapshot into `into`, and the outcome
 * reported. A snapshot that cannot be restored at all is reported failed, which walks the
 * decision's ladder down (checkpoint → baseline → cold); a partial restore is reported
 * degraded (its pin stays); the cold rung writes nothing and is reported restored (the agent
 * clones fresh). The target is checked before anything is acquired (UNSAFE_TARGET).
 */
export async function acquireAndRestore(
  port: RestorePort,
  opts: AcquireAndRestoreOptions,
): Promise<AcquireAndRestoreResult> {
  const target = await checkTarget(opts.into);
  const { acquire, into: _into, host, continueLive, ...restoreOptions } = opts;
  let plan: RestorePlan | null = await port.acquire({ ...acquire, workspace: target, host });
  const steps: AcquireStep[] = [];
  const workContextId = plan.workContextId;
  while (plan) {
    if (plan.live && continueLive && (await continueLive(plan))) {
      await port.reportRestore({ restoreId: plan.restoreId, outcome: "restored" });
      steps.push({ plan, result: null, reported: "restored", error: null });
      return { steps, path: plan.live.workspace, workContextId };
    }
    if (!plan.snapshot) {
      await port.reportRestore({ restoreId: plan.restoreId, outcome: "restored" });
      steps.push({ plan, result: null, reported: "restored", error: null });
      return { steps, path: null, workContextId };
    }
    let report: RestoreSnapshotResult;
    try {
      report = await restoreSnapshot(port, { ...restoreOptions, snapshotId: plan.snapshot.id, into: target });
    } catch (error) {
      if (!isSnapshotFailure(error)) throw error;
      const rung = await reportRestoreFailure(port, plan.restoreId, error);
      steps.push({ plan, result: null, reported: rung.reported, error: rung.error });
      plan = rung.next;
      continue;
    }
    const result = report.result;
    const rung = await reportRestoreResult(port, plan.restoreId, result);
    steps.push({ plan, result, reported: rung.reported, error: rung.error, dependencies: report.dependencies });
    if (rung.reported !== "failed") return { steps, path: report.path, workContextId };
    plan = rung.next;
  }
  return { steps, path: null, workContextId };
}
