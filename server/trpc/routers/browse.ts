import { listRepositories, listRestores } from "../../services/browse.ts";
import { listSnapshots, snapshotListInput } from "../../services/snapshot-list.ts";
import { router, staffProcedure } from "../init.ts";

const staff = staffProcedure(["operator", "support", "admin"]);

// Dashboard reads, for every signed-in role.
export const browseRouter = router({
  repositories: staff.query(({ ctx }) => listRepositories(ctx.db)),
  snapshots: staff.input(snapshotListInput).query(({ ctx, input }) => listSnapshots(ctx.db, input)),
  restores: staff.query(({ ctx }) => listRestores(ctx.db)),
});
