import { getSnapshot, getSnapshotInput } from "../../lineage/snapshots.ts";
import { listSnapshots, snapshotListInput } from "../../lineage/snapshot-list.ts";
import { snapshotDetailSchema, snapshotPageSchema } from "../../domain/views.ts";
import { agentProcedure, router } from "../init.ts";

export const snapshotRouter = router({
  get: agentProcedure
    .input(getSnapshotInput)
    .output(snapshotDetailSchema)
    .query(({ ctx, input }) => getSnapshot(ctx.db, { ...input, agent: ctx.agent })),
  list: agentProcedure
    .input(snapshotListInput)
    .output(snapshotPageSchema)
    .query(({ ctx, input }) => listSnapshots(ctx.db, input, { agentId: ctx.agent.agentId })),
});
