import { z } from "zod";
import { collectionOverview, listPins, listRepositories, listRestores } from "../../services/browse.ts";
import { listSnapshots, snapshotListInput } from "../../services/snapshot-list.ts";
import { router, staffProcedure } from "../init.ts";

const staff = staffProcedure(["operator", "support", "admin"]);

// Dashboard reads, for every signed-in role.
export const browseRouter = router({
  repositories: staff.query(({ ctx }) => listRepositories(ctx.db)),
  snapshots: staff.input(snapshotListInput).query(({ ctx, input }) => listSnapshots(ctx.db, input)),
  pins: staff
    .input(z.object({ active: z.boolean().optional() }).default({}))
    .query(({ ctx, input }) => listPins(ctx.db, input)),
  restores: staff.query(({ ctx }) => listRestores(ctx.db)),
  collection: staff.query(({ ctx }) => collectionOverview(ctx.db)),
});
