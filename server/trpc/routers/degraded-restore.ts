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
const list = staff
  .input(listDegradedRestoresInput.prefault({}))
  .query(({ ctx, input }) => listDegradedRestores(ctx.db, input));

const discard = discarder
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
  .mutation(({ ctx, input }) => discardDegraded(ctx.db, { ...input, user: ctx.user }));

export const degradedRestoreRouter = router({ list, discard });

/**
 * The names these had before (`restore.degraded`, `restore.discardDegraded`), kept for one
 * release: agents report restores through `workspace.reportRestore`, and `restore` misled.
 */
export const restoreAliasRouter = router({ degraded: list, discardDegraded: discard });
