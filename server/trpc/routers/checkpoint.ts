import { appendCheckpoint, appendCheckpointInput } from "../../lineage/checkpoints.ts";
import { appendCheckpointResultSchema } from "../../domain/views.ts";
import { withIdempotencyKey } from "../idempotency.ts";
import { agentProcedure, router } from "../init.ts";

export const checkpointRouter = router({
  append: agentProcedure
    .input(appendCheckpointInput)
    .output(appendCheckpointResultSchema)
    // A lost fence keeps its record of the capture (for reclamation): the key answers it again.
    .meta({ idempotencyKey: true })
    .mutation((opts) =>
      withIdempotencyKey(opts, (db) => appendCheckpoint(db, { ...opts.input, agent: opts.ctx.agent }), {
        keptRefusals: ["FENCE_LOST"],
      }),
    ),
});
