import { z } from "zod";
import { collectionRunSchema, collectResultSchema, headReleaseTallySchema } from "../../domain/content-views.ts";
import { listCollectionRuns } from "../../gc/collect-garbage.ts";
import { collectAndAudit } from "../../gc/audited-collection.ts";
import { releaseRetiredHeads } from "../../lineage/retirement.ts";
import { collectProcedure as admin, router } from "../init.ts";

// Garbage collection for admins. The worker calls the services directly on its schedule.
export const gcRouter = router({
  releaseRetiredHeads: admin.output(headReleaseTallySchema).mutation(({ ctx }) => releaseRetiredHeads(ctx.db)),
  /**
   * Runs a collection now (unless one is running); the interval is skipped unless force is false.
   * Audited like the dashboard's run, with the admin who asked.
   */
  collect: admin
    .input(
      z
        .strictObject({
          force: z.boolean().default(true),
          /** Only say what the run would delete and free (recorded as a dry run, nothing changed). */
          dryRun: z.boolean().default(false),
          graceSeconds: z
            .number()
            .int()
            .min(0)
            .max(30 * 24 * 3600)
            .optional(),
        })
        .default({ force: true, dryRun: false }),
    )
    .output(collectResultSchema)
    .mutation(({ ctx, input }) =>
      collectAndAudit(ctx.db, {
        force: input.force,
        dryRun: input.dryRun,
        graceSeconds: input.graceSeconds,
        host: `admin:${ctx.user.userId}`,
        actor: { type: "user", id: ctx.user.userId },
        reason: "run through the API (gc.collect)",
      }),
    ),
  runs: admin
    .input(z.strictObject({ limit: z.number().int().min(1).max(500).default(50) }).default({ limit: 50 }))
    .output(z.array(collectionRunSchema))
    .query(({ ctx, input }) => listCollectionRuns(ctx.db, input)),
});
