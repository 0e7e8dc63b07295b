import { publishBaseline, publishBaselineInput } from "../../services/baselines.ts";
import { publishBaselineResultSchema } from "../../domain/views.ts";
import { agentProcedure, router } from "../init.ts";

export const baselineRouter = router({
  publish: agentProcedure
    .input(publishBaselineInput)
    .output(publishBaselineResultSchema)
    .mutation(({ ctx, input }) => publishBaseline(ctx.db, { ...input, agent: ctx.agent })),
});
