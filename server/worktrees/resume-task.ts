// Resuming a task on this host, wherever its catalog is (this machine's database, or a server
// through the SDK): the resume plan says which checkouts the task recorded; each one on this
// host that is still its snapshot continues in place, any other is restored into this host's
// pool (reusing an idle clean worktree when there is one); a live hold the task kept is ended
// once its checkout continues. `strata resume` and the SDK's resume() both run this.
import { hostname } from "node:os";
import type { ResumePlan } from "../domain/resume-plan.ts";
import { objectStoresDirectory } from "../restore/engine/host-object-store.ts";
import type { RestoreProgress } from "../restore/engine/restore.ts";
import type { PlanResumeInput } from "../restore/plan-resume.ts";
import type { RestorePort } from "../restore/restore-snapshot.ts";
import { openWorktreePool, poolDirectory } from "./pool.ts";
import { restoredDirectory } from "./host-access.ts";
import type { ProcessIdentity } from "./process-identity.ts";
import { resumeCheckouts, resumedLiveHolds, type ResumeResult } from "./resume-checkouts.ts";

/** The catalog a resume reads: snapshot records and blobs, the task's plan, and its live holds. */
export interface ResumeSource {
  port: RestorePort;
  plan(input: PlanResumeInput): Promise<ResumePlan>;
  /** Ends a live hold the resume continued in (reason `resumed`). */
  endHold(holdId: string): Promise<void>;
}

export interface ResumeTaskOptions {
  /** Every checkout of a work context, or one snapshot. */
  target: { workContextId: string } | { snapshotId: string };
  /** This host's data directory: the pool is its worktrees/, the object stores its objects/. */
  dataDir: string;
  /** This host's name (STRATA_HOST). */
  host: string;
  /** This host's restore state (crash records). */
  stateDir: string;
  maxIdlePerRepository?: number;
  /** The process the taken worktrees are held for (this one by default). */
  holder?: ProcessIdentity;
  onProgress?: (event: RestoreProgress) => void;
}

export type ResumeTaskResult = ResumeResult & { liveHoldsEnded: string[] };

/** Resumes the task; the worktrees it took stay held (`held`) until the caller releases them. */
export async function resumeTask(source: ResumeSource, o: ResumeTaskOptions): Promise<ResumeTaskResult> {
  const pool = await openWorktreePool({ dir: poolDirectory(o.dataDir), host: o.host });
  const hostNames = [o.host, hostname()];
  const plan = await source.plan(o.target);
  const resumed = await resumeCheckouts({
    plan,
    port: source.port,
    pool,
    unpooledDir: restoredDirectory(o.dataDir),
    stateDir: o.stateDir,
    hostNames,
    owner: "workContextId" in o.target ? o.target.workContextId : `snapshot:${o.target.snapshotId}`,
    maxIdlePerRepository: o.maxIdlePerRepository,
    holder: o.holder,
    restore: {
      onProgress: o.onProgress,
      // Worktrees of one repository share this host's object store (docs/restore.md).
      objectStores: objectStoresDirectory(o.dataDir),
    },
  });
  const liveHoldsEnded: string[] = [];
  for (const holdId of resumedLiveHolds(plan, resumed, hostNames)) {
    if (
      await source.endHold(holdId).then(
        () => true,
        () => false,
      )
    )
      liveHoldsEnded.push(holdId);
  }
  return { ...resumed, liveHoldsEnded };
}
