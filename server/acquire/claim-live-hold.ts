// The live rung of an acquire: a paused work context that holds its live workspace on the
// requesting host resumes in it, nothing restored. It is decided after the ladder, the same way
// on both databases: when the ladder chose the lineage's head on the checkpoint rung, one
// indexed lookup (the lineage's one unended hold, live_holds_one_unended) finds whether that
// head is held on this host and the hold still lasts; the acquire then ends the hold (`resumed`)
// with a conditional update, so two acquires never both get the workspace, and releases its pin.
// The restore the acquire recorded (the head, pinned by the restore) stands: the agent reports
// it restored once it finds the workspace is that checkpoint, or restores the checkpoint.
import { inTransaction, type Db } from "../db/client.ts";
import { liveHoldStatus, type LiveWorkspace } from "../domain/live-holds.ts";
import { endLiveHold } from "../lineage/hold-workspace.ts";

export async function claimLiveHold(
  db: Db,
  opts: { agentId: string; lineageId: string; snapshotId: string; host: string; now: Date },
): Promise<LiveWorkspace | null> {
  const hold = await db.liveHold.findFirst({ where: { lineageId: opts.lineageId, endedAt: null } });
  if (
    !hold ||
    hold.agentId !== opts.agentId ||
    hold.host !== opts.host ||
    hold.snapshotId !== opts.snapshotId ||
    liveHoldStatus(hold, opts.now) !== "active"
  ) {
    return null;
  }
  const claimed = await inTransaction(db, (tx) => endLiveHold(tx, hold, "resumed", opts.now));
  return claimed ? { holdId: hold.id, workspace: hold.workspace, host: hold.host, expiresAt: hold.expiresAt } : null;
}
