import { listRepositories, listRepositoriesInput, listRestores, listRestoresInput } from "../../dashboard/browse.ts";
import { listSnapshots, snapshotListInput } from "../../lineage/snapshot-list.ts";
import { router, staffProcedure as staff } from "../init.ts";

// Dashboard reads, for every signed-in role.
export const browseRouter = router({
  repositories: staff
    .input(listRepositoriesInput.prefault({}))
    .query(({ ctx, input }) => listRepositories(ctx.db, input)),
  snapshots: staff.input(snapshotListInput).query(({ ctx, input }) => listSnapshots(ctx.db, input)),
  restores: staff.input(listRestoresInput.prefault({})).query(({ ctx, input }) => listRestores(ctx.db, input)),
});
