import { appendCheckpoint, appendCheckpointInput } from "../../lineage/checkpoints.ts";
import { appendCheckpointResultSchema } from "../../domain/views.ts";
import { agentProcedure, router } from "../init.ts";

export const checkpointRouter = router({
  append: agentProcedure
    .input(appendCheckpointInput)
    .output(appendCheckpointResultSchema)
    .mutation(({ ctx, input }) => appendCheckpoint(ctx.db, { ...input, agent: ctx.agent })),
});
