// What `workspace.resume` answers: the checkouts a task recorded, each with its latest snapshot
// and where that snapshot was captured (directory and host). The host side decides what to do
// with each (server/worktrees/resume-checkouts.ts): continue in place, or restore into the pool.
import { z } from "zod";
import { liveWorkspaceSchema } from "./live-holds.ts";
import { snapshotRefSchema } from "./views.ts";

const resumeCheckoutSchema = z.object({
  snapshot: snapshotRefSchema,
  repository: z.object({ id: z.string(), identity: z.string(), name: z.string() }),
  /** Where the snapshot was captured; null when the capture did not say. */
  recorded: z.object({ workspace: z.string().nullable(), host: z.string().nullable() }),
  /** The live workspace the paused work context holds for this snapshot, while the hold lasts. */
  live: liveWorkspaceSchema.nullable().optional(),
});
export type ResumeCheckout = z.infer<typeof resumeCheckoutSchema>;

export const resumePlanSchema = z.object({
  /** The work context resumed (null for a baseline named by id). */
  workContextId: z.string().nullable(),
  /** One per recorded checkout: the ready head of each active lineage of the work context. */
  checkouts: z.array(resumeCheckoutSchema),
});
export type ResumePlan = z.infer<typeof resumePlanSchema>;
