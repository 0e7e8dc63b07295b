import { z } from "zod";
import { collectResultSchema, retireSnapshotResultSchema } from "../../domain/content-views.ts";
import { forkCheckpointResultSchema } from "../../domain/views.ts";
import { listAuditEvents, listAuditEventsInput } from "../../audit/audit-log.ts";
import {
  collectionOverview,
  collectionRunLog,
  collectionRunsInput,
  runCollectionNow,
} from "../../gc/collection-overview.ts";
import {
  repositoryGraphView,
  repositoryGraphViewInput,
  searchRepositoryGraph,
  searchRepositoryGraphInput,
} from "../../dashboard/lineage-graph.ts";
import { inspectPins, inspectPinsInput } from "../../dashboard/pin-inspection.ts";
import { previewRetirement, retirementSubjectInput } from "../../dashboard/retirement-preview.ts";
import { retireLineageByUser, retireLineageByUserInput } from "../../lineage/retire-lineage-by-user.ts";
import { retireSnapshotByUser, retireSnapshotByUserInput } from "../../lineage/retire-snapshot-by-user.ts";
import { forkCheckpoint, forkCheckpointInput } from "../../lineage/fork-checkpoint.ts";
import { listLiveHolds, listLiveHoldsInput, liveHoldListSchema } from "../../lineage/list-live-holds.ts";
import { snapshotDetail, snapshotDetailInput } from "../../dashboard/snapshot-detail.ts";
import { dashboardDiffInput, snapshotDiffSchema } from "../../domain/snapshot-diff.ts";
import { diffSnapshotsForStaff } from "../../diff/diff-snapshots.ts";
import { repositoryPool, repositoryPoolInput, repositoryPoolSchema } from "../../dashboard/repository-pool.ts";
import { loadConfig } from "../../config/config.ts";
import {
  collectProcedure as admin,
  forkProcedure as forker,
  retireProcedure as retirer,
  router,
  staffProcedure as staff,
} from "../init.ts";

// The operator dashboard. Reads for every signed-in role; each mutation names its roles here,
// on the server, whatever the pages show.
export const dashboardRouter = router({
  graph: staff.input(repositoryGraphViewInput).query(({ ctx, input }) => repositoryGraphView(ctx.db, input)),
  graphSearch: staff.input(searchRepositoryGraphInput).query(({ ctx, input }) => searchRepositoryGraph(ctx.db, input)),
  // This server's host's pool: the one under its own data directory.
  repositoryPool: staff
    .input(repositoryPoolInput)
    .output(repositoryPoolSchema)
    .query(({ ctx, input }) => {
      const { dataDir, host } = loadConfig();
      return repositoryPool(ctx.db, { ...input, dataDir, host });
    }),
  snapshot: staff.input(snapshotDetailInput).query(({ ctx, input }) => snapshotDetail(ctx.db, input)),
  snapshotDiff: staff
    .input(dashboardDiffInput)
    .output(snapshotDiffSchema)
    .query(({ ctx, input }) => diffSnapshotsForStaff(ctx.db, input)),
  pins: staff.input(inspectPinsInput.prefault({})).query(({ ctx, input }) => inspectPins(ctx.db, input)),
  liveHolds: staff
    .input(listLiveHoldsInput.prefault({}))
    .output(liveHoldListSchema)
    .query(({ ctx, input }) => listLiveHolds(ctx.db, input)),
  audit: staff.input(listAuditEventsInput.prefault({})).query(({ ctx, input }) => listAuditEvents(ctx.db, input)),
  // The worker's schedule as this server is configured, until a worker has offered a run.
  collection: staff.query(({ ctx }) =>
    collectionOverview(ctx.db, { configuredIntervalSeconds: loadConfig().gcIntervalSeconds }),
  ),
  collectionRuns: staff
    .input(collectionRunsInput.prefault({}))
    .query(({ ctx, input }) => collectionRunLog(ctx.db, input)),

  retirementPreview: retirer.input(retirementSubjectInput).query(({ ctx, input }) => previewRetirement(ctx.db, input)),
  retireSnapshot: retirer
    .input(retireSnapshotByUserInput)
    .output(retireSnapshotResultSchema)
    .mutation(({ ctx, input }) => retireSnapshotByUser(ctx.db, { ...input, user: ctx.user })),
  retireLineage: retirer
    .input(retireLineageByUserInput)
    .output(z.object({ lineageId: z.string(), alreadyRetired: z.boolean(), retiredSnapshotIds: z.array(z.string()) }))
    .mutation(({ ctx, input }) => retireLineageByUser(ctx.db, { ...input, user: ctx.user })),
  forkCheckpoint: forker
    .input(forkCheckpointInput)
    .output(forkCheckpointResultSchema)
    .mutation(({ ctx, input }) => forkCheckpoint(ctx.db, { ...input, actor: { kind: "user", user: ctx.user } })),
  runCollection: admin
    .input(z.strictObject({ dryRun: z.boolean().default(false) }).prefault({}))
    .output(collectResultSchema)
    .mutation(({ ctx, input }) => runCollectionNow(ctx.db, { user: ctx.user, dryRun: input.dryRun })),
});
