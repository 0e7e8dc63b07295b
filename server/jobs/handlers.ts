// What each job kind does. Handlers are idempotent: a job may run again after its worker died at
// any point, so each one first finds out how far an earlier attempt got.
//
//   capture  fenced on the lineage head observed by the first attempt (kept in the job's memo);
//            a later attempt that finds the head already moved to this job's own capture only
//            makes sure its layers are registered, and never appends a second checkpoint.
//   restore  builds the worktree in a job-owned directory next to the target, records the
//            result in the memo, renames it into place and reports. A later attempt resumes
//            from the memo (or starts over in a clean job directory); the target only ever
//            appears whole. A failed rung is reported, which walks the ladder; the worker then
//            restores the next plan in the same job.
//   sweep, gc  the lineage sweeper and collection (collection has its own lease and fencing).
import { existsSync } from "node:fs";
import { realpath, rename, rm, rmdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Db } from "../db/client.ts";
import type { Prisma } from "../db/generated/postgres/client.ts";
import { captureManifestSchema } from "../domain/capture-manifest.ts";
import { isStrataError, StrataError } from "../domain/errors.ts";
import { captureJobDataSchema, restoreJobDataSchema } from "../domain/jobs.ts";
import { restoreResultSchema, type RestoreResult } from "../domain/restore-result.ts";
import { trustAgent, type AgentScope } from "../domain/scope.ts";
import { checkTarget } from "../restore/engine/restore-staging.ts";
import { checkIfCheckout, continuesAt } from "../worktrees/verify-worktree.ts";
import type { HostAccess } from "../worktrees/host-access.ts";
import { describeCheckout } from "../git/checkout-info.ts";
import {
  captureAndPublish,
  captureLayers,
  localCatalog,
  manifestBlob,
  type CatalogPort,
} from "../capture/capture-publish.ts";
import {
  loadCaptureManifest,
  localRestorePort,
  reportRestoreFailure,
  reportRestoreResult,
  restoreSnapshot,
} from "../restore/restore-snapshot.ts";
import { getSnapshot } from "../lineage/snapshots.ts";
import { runGcJob, runSweepJob } from "./maintenance.ts";
import type { ClaimedJob } from "./queue.ts";
import type { JobContext, JobHandler } from "./worker.ts";

export interface HandlerOptions {
  db: Db;
  /** This worker's host: capture and restore jobs name it. */
  host: string;
  /** What this worker may touch on its host, and for which agent. */
  access: HostAccess;
  /** This host's restore state (crash records of interrupted restores). */
  stateDir: string;
  /** This host's shared object stores, one per repository, that restores borrow from (host-object-store.ts). */
  objectStores?: string;
  gitPath?: string;
  /**
   * Test seam: called synchronously at named points of a job (`capture:publish`,
   * `restore:staged`…), so a test can stop the process exactly there.
   */
  checkpoint?: (point: string) => void;
}

function json(value: unknown): Prisma.InputJsonValue {
  return JSON.parse(JSON.stringify(value ?? null)) as Prisma.InputJsonValue;
}

async function agentOf(db: Db, agentId: string | null): Promise<AgentScope> {
  const agent = agentId ? await db.agent.findUnique({ where: { id: agentId } }) : null;
  if (!agent || agent.disabledAt) {
    throw new StrataError("UNAUTHORIZED", "The job's agent does not exist or is disabled.", { retryable: false });
  }
  return trustAgent(agent.id, agent.name);
}

/** Progress writes at most every 250 ms (a capture reports each uploaded blob). */
function throttledProgress(ctx: JobContext): (progress: Record<string, unknown>) => void {
  let last = 0;
  let lastStep: unknown;
  return (progress) => {
    const now = Date.now();
    if (progress.step === lastStep && now - last < 250) return;
    last = now;
    lastStep = progress.step;
    // A lost claim surfaces through ctx.signal; the write's own failure needs no handling here.
    ctx.progress(json(progress)).catch(() => undefined);
  };
}

export function createJobHandler(opts: HandlerOptions): JobHandler {
  const checkpoint = opts.checkpoint ?? (() => undefined);
  return async (job, ctx) => {
    if ((job.kind === "capture" || job.kind === "restore") && job.host !== opts.host) {
      throw new StrataError("INVALID_INPUT", `Job ${job.id} is addressed to ${job.host}, not ${opts.host}.`, {
        retryable: false,
      });
    }
    switch (job.kind) {
      case "sweep":
        return runSweepJob(opts.db);
      case "gc": {
        const interval = (job.data as { intervalSeconds?: unknown } | null)?.intervalSeconds;
        return runGcJob(opts.db, {
          host: opts.host,
          signal: ctx.signal,
          ...(typeof interval === "number" ? { intervalSeconds: interval } : {}),
        });
      }
      case "capture":
        return runCapture(opts, job, ctx, checkpoint);
      case "restore":
        return runRestore(opts, job, ctx, checkpoint);
    }
  };
}

// --- capture -----------------------------------------------------------------------------------------

interface CaptureMemo {
  observedHeadId: string | null;
}

function captureMemo(memo: unknown): CaptureMemo | null {
  const m = memo as { observedHeadId?: unknown } | null;
  if (!m || !("observedHeadId" in m)) return null;
  return typeof m.observedHeadId === "string" || m.observedHeadId === null
    ? { observedHeadId: m.observedHeadId }
    : null;
}

async function runCapture(
  opts: HandlerOptions,
  job: ClaimedJob,
  ctx: JobContext,
  checkpoint: (point: string) => void,
): Promise<Prisma.InputJsonValue> {
  const data = captureJobDataSchema.parse(job.data);
  const agent = await agentOf(opts.db, job.agentId);
  // Before any git call: the directory must be the agent's own on this host.
  const access = await opts.access.forCapture(opts.db, agent, data.dir);
  const checkout = await describeCheckout(access.path, {
    signal: ctx.signal,
    ...(opts.gitPath ? { gitPath: opts.gitPath } : {}),
  });
  opts.access.confirmCheckout(access, checkout.layout);
  const port = localCatalog(opts.db, agent);
  const source = { workspace: data.dir, host: opts.host };

  let memo = captureMemo(job.memo);
  if (memo) {
    const recovered = await publishedEarlier(opts.db, port, agent, data, memo, source);
    if (recovered) return recovered;
  } else {
    memo = { observedHeadId: await port.lineageHeadId(data.key) };
    await ctx.remember(json(memo));
  }
  const observed = memo.observedHeadId;
  // Every attempt is fenced on the head the first one saw.
  const fenced: CatalogPort = { ...port, lineageHeadId: async () => observed };
  const progress = throttledProgress(ctx);
  const result = await captureAndPublish(fenced, {
    dir: access.path,
    checkout,
    target: { kind: "checkpoint", key: data.key },
    source,
    signal: ctx.signal,
    capture: opts.gitPath ? { gitPath: opts.gitPath } : undefined,
    onProgress: (step, detail) => {
      progress({ step, ...detail });
      checkpoint(`capture:${step}`);
    },
  });
  return json({
    outcome: result.outcome,
    snapshotId: result.snapshotId,
    treeId: result.manifest.tree,
    uploaded: result.uploaded,
    layersRegistered: result.layers.registered,
  });
}

/**
 * The snapshot an earlier attempt of this job appended, if the lineage head moved from the
 * observed head to a capture of this checkout on this host. Its layers are registered again
 * (idempotent), in case the attempt died between appending and registering.
 */
async function publishedEarlier(
  db: Db,
  port: CatalogPort,
  agent: AgentScope,
  data: ReturnType<typeof captureJobDataSchema.parse>,
  memo: CaptureMemo,
  source: { workspace: string; host: string },
): Promise<Prisma.InputJsonValue | null> {
  const current = await port.lineageHeadId(data.key);
  if (!current || current === memo.observedHeadId) return null;
  const row = await db.snapshot.findUnique({
    where: { id: current },
    select: { predecessorId: true, sourceHost: true, sourceWorkspace: true, treeId: true },
  });
  if (!row || row.predecessorId !== memo.observedHeadId) return null;
  if (row.sourceHost !== source.host || row.sourceWorkspace !== source.workspace) return null;
  const snapshot = await getSnapshot(db, { snapshotId: current, agent, includeRetired: true });
  const restorePort = localRestorePort(db, agent);
  const { manifest } = await loadCaptureManifest(restorePort, snapshot);
  const full = captureManifestSchema.parse(manifest);
  await port.publishLayers({ snapshotId: current, ...captureLayers(full, manifestBlob(full)) });
  return json({
    outcome: "appended",
    snapshotId: current,
    treeId: row.treeId,
    recovered: true,
    layersRegistered: true,
  });
}

// --- restore -----------------------------------------------------------------------------------------

interface RestoreMemo {
  restoreId: string;
  /** The result of the rung restored into the job directory, once it is complete there. */
  staged?: { result: RestoreResult; hasTree: boolean; dependencies?: unknown };
}

function restoreMemo(memo: unknown, fallback: string): RestoreMemo {
  const m = memo as {
    restoreId?: unknown;
    staged?: { result?: unknown; hasTree?: unknown; dependencies?: unknown };
  } | null;
  if (!m || typeof m.restoreId !== "string") return { restoreId: fallback };
  const parsed = m.staged ? restoreResultSchema.safeParse(m.staged.result) : null;
  return parsed?.success
    ? {
        restoreId: m.restoreId,
        staged: {
          result: parsed.data,
          hasTree: m.staged?.hasTree === true,
          dependencies: m.staged?.dependencies ?? null,
        },
      }
    : { restoreId: m.restoreId };
}

/** Failures of the snapshot itself, after which the ladder moves to the next rung. */
function isSnapshotFailure(error: unknown): error is StrataError {
  return (
    isStrataError(error, "INVALID_SNAPSHOT") ||
    isStrataError(error, "BLOB_MISSING") ||
    isStrataError(error, "BLOB_CORRUPT")
  );
}

/**
 * Whether `dir` is the top of a checkout that continues the snapshot in place, as a resume judges
 * it (verify-worktree.ts). Only read, never written. A snapshot that cannot be read is not judged
 * here: the restore that follows reports it and walks the ladder.
 */
async function continuesInPlace(
  port: ReturnType<typeof localRestorePort>,
  snapshotId: string,
  dir: string,
  signal: AbortSignal,
): Promise<boolean> {
  if (!existsSync(join(dir, ".git"))) return false;
  try {
    const loaded = await loadCaptureManifest(port, await port.getSnapshot(snapshotId), signal);
    const v = await checkIfCheckout({ snapshotId, manifest: loaded.manifest }, dir);
    return v !== null && continuesAt(v) && (await realpath(v.root)) === (await realpath(dir));
  } catch (error) {
    if (isStrataError(error) && error.code !== "ABORTED") return false;
    throw error;
  }
}

interface RestoreStep {
  restoreId: string;
  reported: "restored" | "degraded" | "failed";
  error?: { code: string; message: string };
}

async function runRestore(
  opts: HandlerOptions,
  job: ClaimedJob,
  ctx: JobContext,
  checkpoint: (point: string) => void,
): Promise<Prisma.InputJsonValue> {
  const data = restoreJobDataSchema.parse(job.data);
  const agent = await agentOf(opts.db, job.agentId);
  const port = localRestorePort(opts.db, agent);
  // Before anything is read or written there: the target is claimed as the agent's on this host.
  const into = await opts.access.claimForRestore(opts.db, agent, data.into, job.id);
  // Job-owned, next to the target (same filesystem, so the final rename is atomic).
  const jobDir = join(dirname(into), `.strata-job-${job.id}-${basename(into).slice(0, 40)}`);
  const progress = throttledProgress(ctx);
  const steps: RestoreStep[] = [];
  let memo = restoreMemo(job.memo, data.restoreId);

  const finish = (restoreId: string, outcome: string) =>
    json({
      restoreId,
      outcome,
      path: existsSync(into) ? into : null,
      steps,
      // The dependency cache the restored checkout got (or why none): see docs/backends.md.
      ...(memo.staged?.dependencies ? { dependencies: memo.staged.dependencies } : {}),
    });
  const moveOn = async (nextId: string | null | undefined, restoreId: string, outcome: string) => {
    if (!nextId) return finish(restoreId, outcome);
    memo = { restoreId: nextId };
    await ctx.remember(json(memo));
    return null;
  };

  for (;;) {
    ctx.signal.throwIfAborted();
    const row = await opts.db.restore.findFirst({
      where: { id: memo.restoreId, agentId: agent.agentId },
      select: { id: true, outcome: true, snapshotId: true, nextRestore: { select: { id: true } } },
    });
    if (!row) throw new StrataError("NOT_FOUND", `Restore ${memo.restoreId} was not found.`, { retryable: false });

    if (row.outcome !== "pending") {
      // Reported by an earlier attempt: follow the ladder if it went on.
      const done = await moveOn(row.outcome === "failed" ? row.nextRestore?.id : null, row.id, row.outcome);
      if (done) return done;
      continue;
    }
    if (!row.snapshotId) {
      // The cold rung: nothing to restore; the agent clones fresh.
      await port.reportRestore({ restoreId: row.id, outcome: "restored" });
      steps.push({ restoreId: row.id, reported: "restored" });
      return finish(row.id, "restored");
    }

    if (!memo.staged && (await continuesInPlace(port, row.snapshotId, into, ctx.signal))) {
      // The target already is this snapshot's checkout: the task continues there, nothing written.
      await port.reportRestore({ restoreId: row.id, outcome: "restored" });
      steps.push({ restoreId: row.id, reported: "restored" });
      progress({ step: "in-place", restoreId: row.id });
      return json({ restoreId: row.id, outcome: "restored", path: into, inPlace: true, steps });
    }
    if (!memo.staged) {
      // Whatever an earlier attempt left in the job directory is incomplete: start it over.
      await rm(jobDir, { recursive: true, force: true });
      await checkTarget(into);
      progress({ step: "restore", restoreId: row.id });
      let staged;
      try {
        staged = await restoreSnapshot(port, {
          snapshotId: row.snapshotId,
          into: jobDir,
          stateDir: opts.stateDir,
          signal: ctx.signal,
          ...(opts.objectStores ? { objectStores: opts.objectStores } : {}),
          ...(opts.gitPath ? { gitPath: opts.gitPath } : {}),
          onProgress: (event) => {
            progress({ step: event.phase, restoreId: row.id });
            checkpoint(`restore:${event.phase}`);
          },
        });
      } catch (error) {
        if (!isSnapshotFailure(error)) throw error;
        const rung = await reportRestoreFailure(port, row.id, error);
        steps.push({ restoreId: row.id, reported: "failed", error: rung.error });
        const done = await moveOn(rung.next?.restoreId, row.id, "failed");
        if (done) return done;
        continue;
      }
      memo = {
        restoreId: row.id,
        staged: { result: staged.result, hasTree: staged.path !== null, dependencies: staged.dependencies },
      };
      await ctx.remember(json(memo));
      checkpoint("restore:staged");
    }

    const { result, hasTree } = memo.staged!;
    if (hasTree && existsSync(jobDir)) {
      await checkTarget(into);
      // Empty or absent (checked just now); rmdir refuses anything written there since.
      await rmdir(into).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      });
      await rename(jobDir, into);
    }
    checkpoint("restore:placed");

    const rung = await reportRestoreResult(port, row.id, result);
    if (rung.reported !== "failed") {
      steps.push({ restoreId: row.id, reported: rung.reported });
      return finish(row.id, rung.reported);
    }
    steps.push({ restoreId: row.id, reported: "failed", error: rung.error });
    const done = await moveOn(rung.next?.restoreId, row.id, "failed");
    if (done) return done;
  }
}
