import { z } from "zod";
import { collectionOverview, listPins, listRepositories, listRestores } from "../../services/browse.ts";
import { listSnapshots, snapshotListInput } from "../../services/snapshot-list.ts";
import { publicProcedure, router } from "../init.ts";

// Dashboard reads. They move behind operator sign-in when dashboard auth lands.
export const browseRouter = router({
  repositories: publicProcedure.query(({ ctx }) => listRepositories(ctx.db)),
  snapshots: publicProcedure.input(snapshotListInput).query(({ ctx, input }) => listSnapshots(ctx.db, input)),
  pins: publicProcedure
    .input(z.object({ active: z.boolean().optional() }).default({}))
    .query(({ ctx, input }) => listPins(ctx.db, input)),
  restores: publicProcedure.query(({ ctx }) => listRestores(ctx.db)),
  collection: publicProcedure.query(({ ctx }) => collectionOverview(ctx.db)),
});
