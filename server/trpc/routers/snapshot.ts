import { z } from "zod";
import { blobDigestSchema, publishLayersInput } from "../../domain/content.ts";
import { publishSnapshotResultSchema, retireSnapshotResultSchema } from "../../domain/content-views.ts";
import { entityIdSchema } from "../../domain/snapshot-keys.ts";
import { publishSnapshot } from "../../content/layers.ts";
import { retireSnapshot } from "../../lineage/retirement.ts";
import { getSnapshot, getSnapshotInput } from "../../lineage/snapshots.ts";
import { listSnapshots, snapshotListInput } from "../../lineage/snapshot-list.ts";
import { snapshotDetailSchema, snapshotPageSchema } from "../../domain/views.ts";
import { snapshotDiffInput, snapshotDiffSchema } from "../../domain/snapshot-diff.ts";
import { diffAgentSnapshots } from "../../diff/diff-snapshots.ts";
import { withIdempotencyKey } from "../idempotency.ts";
import { agentProcedure, router } from "../init.ts";

// An agent's snapshots: read them (get, list, diff), register their content (publish), retire them
// (delete).
export const snapshotRouter = router({
  get: agentProcedure
    .input(getSnapshotInput)
    .output(snapshotDetailSchema)
    .query(({ ctx, input }) => getSnapshot(ctx.db, { ...input, agent: ctx.agent })),
  list: agentProcedure
    .input(snapshotListInput)
    .output(snapshotPageSchema)
    .query(({ ctx, input }) => listSnapshots(ctx.db, input, { agentId: ctx.agent.agentId })),
  diff: agentProcedure
    .input(snapshotDiffInput)
    .output(snapshotDiffSchema)
    .query(({ ctx, input }) => diffAgentSnapshots(ctx.db, { ...input, agent: ctx.agent })),
  publish: agentProcedure
    .input(publishLayersInput.extend({ snapshotId: entityIdSchema, manifestDigest: blobDigestSchema.optional() }))
    .output(publishSnapshotResultSchema)
    .meta({ idempotencyKey: true })
    .mutation((opts) =>
      withIdempotencyKey(opts, (db) => publishSnapshot(db, { ...opts.input, agentId: opts.ctx.agent.agentId })),
    ),
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
