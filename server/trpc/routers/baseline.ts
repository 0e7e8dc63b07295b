import { baselineHeadInput, findBaselineHead, publishBaseline, publishBaselineInput } from "../../lineage/baselines.ts";
import { publishBaselineResultSchema, snapshotRefSchema } from "../../domain/views.ts";
import { withIdempotencyKey } from "../idempotency.ts";
import { agentProcedure, router } from "../init.ts";

export const baselineRouter = router({
  publish: agentProcedure
    .input(publishBaselineInput)
    .output(publishBaselineResultSchema)
    .meta({ idempotencyKey: true })
    .mutation((opts) =>
      withIdempotencyKey(opts, (db) => publishBaseline(db, { ...opts.input, agent: opts.ctx.agent })),
    ),
  head: agentProcedure
    .input(baselineHeadInput)
    .output(snapshotRefSchema.nullable())
    .query(({ ctx, input }) => findBaselineHead(ctx.db, { ...input, agent: ctx.agent })),
});
