// resumeCheckouts(plan): the host side of resuming a task. For every checkout the task recorded
// (workspace.resume's plan: its latest snapshot, and the directory and host it was captured in):
//
// - the recorded checkout is on this host and still the snapshot (HEAD the recorded commit, or
//   one that descends from it over the same files): the task continues in place, nothing written;
// - otherwise (drifted, missing, another host's, not a checkout) the snapshot is restored into a
//   pooled worktree of its repository: the task's own worktree when it is free (continued as it
//   is, or reset when it is exactly an older snapshot), else an idle clean one reset to the
//   snapshot (reuse-worktree.ts), else a new one. A repository without remotes is never pooled:
//   it is restored into a new directory each time.
//
// The recorded checkout, which may be the user's own, is only ever read: restores and resets
// write into the pool (or the new directory) alone.
//
// A checkout the paused task holds live (`strata hold`) is a pooled worktree the pool keeps for
// its owner: the task takes it again and continues there; the caller then ends the catalog's
// hold (resumedLiveHolds).
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { isStrataError } from "../domain/errors.ts";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { checkRestoreRecord } from "../domain/restore-record.ts";
import type { RestoreResult } from "../domain/restore-result.ts";
import type { ResumeCheckout, ResumePlan } from "../domain/resume-plan.ts";
import type { RestoreOptions } from "../restore/engine/restore.ts";
import { loadCaptureManifest, restoreSnapshot, type RestorePort } from "../restore/restore-snapshot.ts";
import { poolKeyOf, type PoolRepository } from "./pool-key.ts";
import { recordedSnapshotOf, type RecordedSnapshot, type WorktreePool } from "./pool.ts";
import type { ProcessIdentity } from "./process-identity.ts";
import {
  DEFAULT_MAX_IDLE_PER_REPOSITORY,
  evictIdleWorktrees,
  isReusable,
  resetHeldWorktree,
} from "./reuse-worktree.ts";
import {
  assertStillHeld,
  recordWorktreeSnapshot,
  releaseWorktree,
  takeWorktree,
  type HeldWorktree,
} from "./take-worktree.ts";
import { checkIfCheckout, continuesAt, type WorktreeBinding } from "./verify-worktree.ts";
import { judgeCleanliness } from "./worktree-cleanliness.ts";
import { describeDrift, type WorktreeVerification } from "./worktree-verification.ts";

export interface ResumeCheckoutsOptions {
  plan: ResumePlan;
  /** The catalog: snapshot records, their blobs, pins. */
  port: RestorePort;
  /** This host's pool; null restores every checkout into a new directory. */
  pool: WorktreePool | null;
  /** Where checkouts that cannot be pooled (no remote) are restored, a new directory each time. */
  unpooledDir: string;
  /** This host's restore state (crash records). */
  stateDir: string;
  /** The names this host goes by (STRATA_HOST, the machine's name): a checkout recorded elsewhere is not here. */
  hostNames: readonly string[];
  /** Who pooled worktrees are taken for (the work context): it re-takes its own first. */
  owner: string;
  maxIdlePerRepository?: number;
  /** The process named as the holder of the worktrees taken (this one by default). */
  holder?: ProcessIdentity;
  restore?: Pick<
    RestoreOptions,
    "gitPath" | "baseEnv" | "timeoutMs" | "fetchTimeoutMs" | "signal" | "onProgress" | "objectStores"
  >;
  /** Tests: runs at a step of a reset. */
  beforeResetStep?: (step: "write" | "verify") => Promise<void>;
}

/**
 * - `in-place`: the task continues where the checkout is, nothing written (the recorded checkout,
 *   or its own pooled worktree);
 * - `restored`: the snapshot was restored (or a worktree reset to it), verified, into `path`;
 * - `degraded`: restored only partly (see `result.missing`);
 * - `unrestored`: nothing could be restored; nothing was written.
 */
type ResumeOutcome = "in-place" | "restored" | "degraded" | "unrestored";

export interface ResumedCheckout {
  snapshotId: string;
  /** The repository's identity. */
  repository: string;
  /** Where the snapshot was captured. */
  recorded: { path: string | null; host: string | null };
  outcome: ResumeOutcome;
  /** Where the task continues; null only when nothing could be restored and the recorded checkout is not here. */
  path: string | null;
  /** Why it continues there, in a phrase. */
  reason: string;
  /** The pooled worktree it continues in and how it was had; null otherwise. */
  worktree: { name: string; origin: "new" | "reused" | "retaken" } | null;
  /** The restore's (or reset's) result; null when nothing was restored. */
  result: RestoreResult | null;
  /** Idle worktrees of the repository removed after the restore (past maxIdlePerRepository). */
  evicted: string[];
}

export interface ResumeResult {
  workContextId: string | null;
  checkouts: ResumedCheckout[];
  /** The pooled worktrees this resume took: release them, or stop their leases to leave them to `holder`. */
  held: HeldWorktree[];
}

type Base = Pick<ResumedCheckout, "snapshotId" | "repository" | "recorded">;

/** A snapshot's record, checked: the manifest typed. */
interface Checked {
  snapshotId: string;
  manifest: CaptureManifest;
}

interface Context {
  o: ResumeCheckoutsOptions;
  /** The pool's directory as the file system names it (recorded paths are real paths). */
  poolDir: string | null;
}

/** The recorded checkout when it is on this host, else why it is not. */
function recordedHere(checkout: ResumeCheckout, o: ResumeCheckoutsOptions): { path: string } | { why: string } {
  const { workspace, host } = checkout.recorded;
  if (workspace === null) return { why: "the snapshot recorded no checkout directory" };
  if (host === null || !o.hostNames.includes(host)) return { why: `recorded on ${host ?? "an unknown host"}` };
  if (!existsSync(workspace)) return { why: `${workspace} is missing on this host` };
  return { path: workspace };
}

function sameState(v: WorktreeVerification): string {
  return v.matches ? "matches its snapshot" : "HEAD moved forward over the recorded files";
}

function outcomeOf(result: RestoreResult): ResumeOutcome {
  return result.status === "restored" ? "restored" : result.status;
}

/** Runs fn with the snapshot pinned (an hour at most), as a restore by id does. */
async function withPin<T>(port: RestorePort, snapshotId: string, fn: () => Promise<T>): Promise<T> {
  const pinId = `resume:${randomUUID()}`;
  const pinned = await port.pin(snapshotId, pinId, 60 * 60).then(
    () => true,
    (error: unknown) => {
      // A snapshot that takes no new pins (retired…) is still restored while its content lasts.
      if (isStrataError(error, "PIN_REFUSED")) return false;
      throw error;
    },
  );
  try {
    return await fn();
  } finally {
    if (pinned) await port.release(snapshotId, pinId).catch(() => undefined);
  }
}

/** Restores into a new directory: a checkout whose repository cannot be pooled, or no pool at all. */
async function restoreUnpooled(c: Context, binding: Checked, base: Base, reason: string) {
  const name = basename(binding.manifest.root).replace(/[^A-Za-z0-9._-]+/g, "-") || "checkout";
  const into = join(c.o.unpooledDir, `${name}-${randomUUID().slice(0, 8)}`);
  const report = await restoreSnapshot(c.o.port, {
    ...c.o.restore,
    snapshotId: binding.snapshotId,
    into,
    stateDir: c.o.stateDir,
  });
  return {
    checkout: {
      ...base,
      outcome: outcomeOf(report.result),
      path: report.path,
      reason,
      worktree: null,
      result: report.result,
      evicted: [],
    },
    held: null,
  };
}

/** Resets a held worktree that is exactly `from` to the snapshot: the result, or null when declined. */
async function reset(c: Context, held: HeldWorktree, binding: WorktreeBinding, from: RecordedSnapshot) {
  const report = await resetHeldWorktree(held, binding, from, {
    ...c.o.restore,
    blobs: c.o.port,
    beforeStep: c.o.beforeResetStep,
  });
  return report.status === "reset" ? report.result : null;
}

/** Continues in, resets or restores into a pooled worktree of `repository`. */
async function resumeInPool(
  c: Context,
  pool: WorktreePool,
  repository: PoolRepository,
  binding: Checked,
  base: Base,
  reason: string,
): Promise<{ checkout: ResumedCheckout; held: HeldWorktree | null }> {
  const env = binding.manifest.envHash;
  const takeOptions = { owner: c.o.owner, env, holder: c.o.holder };
  let held = await takeWorktree(pool, repository, { ...takeOptions, reuse: isReusable });
  try {
    const done = (outcome: ResumeOutcome, why: string, result: RestoreResult | null) => ({
      ...base,
      outcome,
      path: held.path,
      reason: why,
      worktree: { name: held.name, origin: held.origin },
      result,
      evicted: [] as string[],
    });
    let result: RestoreResult | null = null;
    if (held.origin === "retaken") {
      const v = await checkIfCheckout(binding, held.path);
      if (v && continuesAt(v)) {
        if (v.matches)
          await recordWorktreeSnapshot(held, {
            snapshot: recordedSnapshotOf(binding.snapshotId, binding.manifest),
            env,
          });
        await assertStillHeld(held);
        return { checkout: done("in-place", `its own pooled worktree ${sameState(v)}`, null), held };
      }
      const previous = held.previous;
      const exactlyPrevious = previous && (await judgeCleanliness(held.path, previous)).state === "clean";
      if (v && !exactlyPrevious) {
        // The task's own work since its last snapshot: it continues as it left it.
        await assertStillHeld(held);
        return {
          checkout: done("in-place", `its own pooled worktree, as it left it (${describeDrift(v)})`, null),
          held,
        };
      }
      if (previous && exactlyPrevious) result = await reset(c, held, binding, previous);
    } else if (held.origin === "reused" && held.previous) {
      result = await reset(c, held, binding, held.previous);
    }
    if (result === null && held.origin !== "new") {
      // Not continued, not reset: a new worktree (a marked one is never offered again).
      await releaseWorktree(held);
      held = await takeWorktree(pool, repository, { ...takeOptions, fresh: true });
    }
    if (result === null) {
      const report = await restoreSnapshot(c.o.port, {
        ...c.o.restore,
        snapshotId: binding.snapshotId,
        into: held.path,
        stateDir: c.o.stateDir,
      });
      result = report.result;
    }
    if (result.status === "unrestored") {
      await releaseWorktree(held);
      return { checkout: { ...done("unrestored", reason, result), path: null, worktree: null }, held: null };
    }
    if (result.status === "restored") {
      await recordWorktreeSnapshot(held, {
        snapshot: recordedSnapshotOf(binding.snapshotId, binding.manifest),
        env,
      });
    }
    const evicted = await evictIdleWorktrees(
      pool,
      repository,
      c.o.maxIdlePerRepository ?? DEFAULT_MAX_IDLE_PER_REPOSITORY,
    );
    await assertStillHeld(held);
    return { checkout: { ...done(outcomeOf(result), reason, result), evicted }, held };
  } catch (error) {
    await releaseWorktree(held).catch(() => undefined);
    throw error;
  }
}

async function resumeOne(c: Context, checkout: ResumeCheckout) {
  const loaded = await loadCaptureManifest(c.o.port, checkout.snapshot, c.o.restore?.signal);
  const binding: Checked = {
    snapshotId: checkout.snapshot.id,
    manifest: checkRestoreRecord({ snapshotId: checkout.snapshot.id, manifest: loaded.manifest }),
  };
  const base: Base = {
    snapshotId: checkout.snapshot.id,
    repository: checkout.repository.identity,
    recorded: { path: checkout.recorded.workspace, host: checkout.recorded.host },
  };
  const here = recordedHere(checkout, c.o);
  let reason: string;
  if ("path" in here && dirname(here.path) === c.poolDir) {
    // The task's own pooled worktree: the pool decides whether it may continue there.
    reason = "its pooled worktree is no longer its own";
  } else if ("path" in here) {
    const v = await checkIfCheckout(binding, here.path);
    if (v && continuesAt(v)) {
      const checkoutHere: ResumedCheckout = {
        ...base,
        outcome: "in-place",
        path: here.path,
        reason: sameState(v),
        worktree: null,
        result: null,
        evicted: [],
      };
      return { checkout: checkoutHere, held: null };
    }
    reason = v ? `${here.path} drifted: ${describeDrift(v)}` : `${here.path} is not a checkout of this snapshot`;
  } else {
    reason = here.why;
  }
  const key = poolKeyOf(binding.manifest.remotes, binding.manifest.root);
  return withPin(c.o.port, checkout.snapshot.id, () =>
    c.o.pool && key.pooled
      ? resumeInPool(c, c.o.pool, key.repository, binding, base, reason)
      : restoreUnpooled(c, binding, base, key.pooled ? reason : `${reason}; ${key.message}`),
  );
}

/**
 * The live holds a resume ended the pause of: those on this host (`hostNames`) of the checkouts
 * it resumed (continued, restored or restored partly). The caller ends them in the catalog
 * (`resumed`); the pool's side of such a hold ended when the resume took the worktree again.
 */
export function resumedLiveHolds(plan: ResumePlan, result: ResumeResult, hostNames: readonly string[]): string[] {
  return plan.checkouts.flatMap((checkout) => {
    const live = checkout.live;
    const resumed = result.checkouts.find((c) => c.snapshotId === checkout.snapshot.id);
    return live && hostNames.includes(live.host) && resumed && resumed.outcome !== "unrestored" ? [live.holdId] : [];
  });
}

/** Resumes every checkout of the plan, one after the other. */
export async function resumeCheckouts(o: ResumeCheckoutsOptions): Promise<ResumeResult> {
  const poolDir = o.pool ? await realpath(o.pool.dir).catch(() => o.pool?.dir ?? null) : null;
  const c: Context = { o, poolDir };
  const result: ResumeResult = { workContextId: o.plan.workContextId, checkouts: [], held: [] };
  try {
    for (const checkout of o.plan.checkouts) {
      const one = await resumeOne(c, checkout);
      result.checkouts.push(one.checkout);
      if (one.held) result.held.push(one.held);
    }
  } catch (error) {
    await Promise.all(result.held.map((h) => releaseWorktree(h).catch(() => undefined)));
    throw error;
  }
  return result;
}
