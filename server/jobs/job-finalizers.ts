// What a job kind must settle when its job ends without doing its work — failed for good,
// cancelled, or its last claim expired. The queue runs the job kind's finalizer inside the
// transaction that ends the job (queue.ts), so the job's end and what it leaves behind commit
// together: a restore job that will not restore reports its restore failed and releases its
// pin, instead of leaving the restore pending and the pin held for its 30 days.
import type { Db } from "../db/client.ts";
import type { JobKind } from "../domain/jobs.ts";
import { abandonRestore } from "../restore/report-restore.ts";

/** The job as it ended, with the cause recorded for it. */
interface EndedJob {
  id: string;
  kind: JobKind;
  agentId: string | null;
  data: unknown;
  memo: unknown;
}

export interface JobEndCause {
  code: string;
  message: string;
}

type JobFinalizer = (tx: Db, job: EndedJob, cause: JobEndCause) => Promise<void>;

export type JobFinalizers = Partial<Record<JobKind, JobFinalizer>>;

/** The restore a restore job is on: the rung its memo names (the ladder moved), else its first. */
function restoreOfJob(job: EndedJob): string | null {
  const memo = job.memo as { restoreId?: unknown } | null;
  if (typeof memo?.restoreId === "string") return memo.restoreId;
  const data = job.data as { restoreId?: unknown } | null;
  return typeof data?.restoreId === "string" ? data.restoreId : null;
}

async function finalizeRestoreJob(tx: Db, job: EndedJob, cause: JobEndCause): Promise<void> {
  const restoreId = restoreOfJob(job);
  if (!restoreId) return;
  await abandonRestore(tx, {
    restoreId,
    error: { code: cause.code, message: `The restore job ${job.id} ended without restoring: ${cause.message}` },
  });
}

/** The finalizers every queue runs unless told otherwise. */
export const JOB_FINALIZERS: JobFinalizers = { restore: finalizeRestoreJob };
