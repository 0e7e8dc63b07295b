import { z } from "zod";
import {
  getLineage,
  getLineageInput,
  listLineages,
  listLineagesInput,
  retireLineage,
  retireLineageInput,
} from "../../lineage/lineages.ts";
import { forkCheckpoint, forkCheckpointInput } from "../../lineage/fork-checkpoint.ts";
import {
  forkCheckpointResultSchema,
  lineagePageSchema,
  lineageViewSchema,
  retireLineageResultSchema,
} from "../../domain/views.ts";
import { agentProcedure, router } from "../init.ts";

// Agents end their own work; `operator` retirement belongs to the dashboard.
const agentRetireInput = retireLineageInput.extend({ reason: z.enum(["completed", "declined"]) });

export const lineageRouter = router({
  retire: agentProcedure
    .input(agentRetireInput)
    .output(retireLineageResultSchema)
    .mutation(({ ctx, input }) => retireLineage(ctx.db, { ...input, actor: { kind: "agent", agent: ctx.agent } })),
  // An authorized fork of one of the agent's own ready checkpoints (another agent's: NOT_FOUND).
  fork: agentProcedure
    .input(forkCheckpointInput)
    .output(forkCheckpointResultSchema)
    .mutation(({ ctx, input }) => forkCheckpoint(ctx.db, { ...input, actor: { kind: "agent", agent: ctx.agent } })),
  get: agentProcedure
    .input(getLineageInput)
    .output(lineageViewSchema)
    .query(({ ctx, input }) => getLineage(ctx.db, { ...input, agent: ctx.agent })),
  list: agentProcedure
    .input(listLineagesInput)
    .output(lineagePageSchema)
    .query(({ ctx, input }) => listLineages(ctx.db, { ...input, agent: ctx.agent })),
});
