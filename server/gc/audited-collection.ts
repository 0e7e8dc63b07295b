// A collection someone asked for (an admin on the dashboard or through the API, an operator's
// `strata gc collect`): run, then recorded in the audit log with who asked and how it ended.
// Scheduled runs (the worker's) are not audited: nobody asked for them. Neither are dry runs:
// they change nothing, and the run log records them with who asked.
import type { Db } from "../db/client.ts";
import { recordAuditEvent, type AuditActor } from "../audit/record-audit-event.ts";
import { collectGarbage, type CollectOptions, type CollectResult } from "./collect-garbage.ts";

export interface AuditedCollectionOptions extends Omit<CollectOptions, "signal" | "hooks"> {
  actor: AuditActor;
  /** Where it was asked for, for the audit log ("run from the dashboard"). */
  reason: string;
}

/** Runs a collection (skipped when one is running, or, without force, not due) and audits it. */
export async function collectAndAudit(db: Db, opts: AuditedCollectionOptions): Promise<CollectResult> {
  const { actor, reason, ...collect } = opts;
  const result = await collectGarbage(db, collect);
  if (collect.dryRun) return result;
  await recordAuditEvent(db, {
    actor,
    action: "gc.collect",
    subjectType: "collection",
    subjectId: result.status === "skipped" ? "skipped" : result.runId,
    reason,
    details:
      result.status === "skipped"
        ? { status: result.status, reason: result.reason }
        : { status: result.status, errorCode: result.errorCode, ...result.tally },
  });
  return result;
}
