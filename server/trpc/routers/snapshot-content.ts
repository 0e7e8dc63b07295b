import { z } from "zod";
import { blobDigestSchema, publishLayersInput } from "../../domain/content.ts";
import { publishSnapshotResultSchema, retireSnapshotResultSchema } from "../../domain/content-views.ts";
import { entityIdSchema } from "../../domain/snapshot-keys.ts";
import { publishSnapshot } from "../../content/layers.ts";
import { retireSnapshot } from "../../lineage/retirement.ts";
import { agentProcedure, router } from "../init.ts";

// snapshot.publish (the layer form) and snapshot.delete (which retires). Merged into the
// `snapshot` namespace in root.ts, next to snapshot.get and snapshot.list.
export const snapshotContentRouter = router({
  publish: agentProcedure
    .input(publishLayersInput.extend({ snapshotId: entityIdSchema, manifestDigest: blobDigestSchema.optional() }))
    .output(publishSnapshotResultSchema)
    .mutation(({ ctx, input }) => publishSnapshot(ctx.db, { ...input, agentId: ctx.agent.agentId })),
  delete: agentProcedure
    .input(z.strictObject({ snapshotId: entityIdSchema }))
    .output(retireSnapshotResultSchema)
    .mutation(({ ctx, input }) =>
      retireSnapshot(ctx.db, {
        snapshotId: input.snapshotId,
        agentId: ctx.agent.agentId,
        actor: { type: "agent", id: ctx.agent.agentId },
      }),
    ),
});
