import { z } from "zod";
import {
  discardDegraded,
  discardDegradedInput,
  listDegradedRestores,
  listDegradedRestoresInput,
} from "../../restore/degraded-restores.ts";
import { discardProcedure as discarder, router, staffProcedure as staff } from "../init.ts";

const restoreTargetSchema = z.object({
  workspace: z.string(),
  host: z.string(),
  snapshotId: z.string().nullable(),
  head: z.string().nullable(),
  tree: z.string().nullable(),
  stage: z.string().nullable(),
  basis: z.string().nullable(),
  recordedAt: z.string(),
});

// Degraded-restore notices for the dashboard: everyone reads the queue, support discards.
export const restoreRouter = router({
  degraded: staff
    .input(listDegradedRestoresInput.prefault({}))
    .query(({ ctx, input }) => listDegradedRestores(ctx.db, input)),
  discardDegraded: discarder
    .input(discardDegradedInput)
    .output(
      z.object({
        restoreId: z.string(),
        alreadyDiscarded: z.boolean(),
        discardedAt: z.date(),
        releasedPinId: z.string().nullable(),
        restoreTarget: restoreTargetSchema.nullable(),
      }),
    )
    .mutation(({ ctx, input }) => discardDegraded(ctx.db, { ...input, user: ctx.user })),
});
