// Live holds as the API and the dashboard show them. A paused work context may hold its live
// workspace (on a host: its pooled worktree) for a while after the pause's checkpoint was
// appended; while the hold lasts, acquire on that host offers the workspace itself, nothing
// restored. A hold is active until it expires or ends; it ends when it is released, when the
// work context resumed in it (acquire or resume), or when a newer hold of the lineage replaced it.
import { z } from "zod";

const LIVE_HOLD_END_REASONS = ["released", "resumed", "replaced", "expired"] as const;
export type LiveHoldEndReason = (typeof LIVE_HOLD_END_REASONS)[number];

/** `active`: protecting now; `expired`: its time ran out; `ended`: released, resumed or replaced. */
const liveHoldStatusSchema = z.enum(["active", "expired", "ended"]);
export type LiveHoldStatus = z.infer<typeof liveHoldStatusSchema>;

export const liveHoldViewSchema = z.object({
  id: z.string(),
  workContextId: z.string(),
  lineageId: z.string(),
  /** The checkpoint the pause appended, which the hold keeps from collection. */
  snapshotId: z.string(),
  host: z.string(),
  workspace: z.string(),
  /** The provider label (the lineage's backendKind), and whether it held for 14 days. */
  provider: z.string(),
  idlePersistent: z.boolean(),
  /** The pin (in the agent's namespace) that protects the checkpoint until the hold is over. */
  pinId: z.string(),
  createdAt: z.date(),
  expiresAt: z.date(),
  endedAt: z.date().nullable(),
  endReason: z.enum(LIVE_HOLD_END_REASONS).nullable(),
  status: liveHoldStatusSchema,
});
export type LiveHoldView = z.infer<typeof liveHoldViewSchema>;

/** Whether a hold protects at `now`: not ended, not expired. */
export function liveHoldStatus(hold: { endedAt: Date | null; expiresAt: Date }, now: Date): LiveHoldStatus {
  if (hold.endedAt !== null) return "ended";
  return hold.expiresAt.getTime() > now.getTime() ? "active" : "expired";
}

/** The held workspace an acquire offers as its live rung. */
export const liveWorkspaceSchema = z.object({
  holdId: z.string(),
  /** The directory to continue in, as it is (nothing was restored into it). */
  workspace: z.string(),
  host: z.string(),
  /** When the hold would have expired. */
  expiresAt: z.date(),
});
export type LiveWorkspace = z.infer<typeof liveWorkspaceSchema>;
