import { hostListSchema, listHosts } from "../../jobs/worker-hosts.ts";
import { agentOrStaffProcedure, router } from "../init.ts";

// Worker hosts: the names jobs may be addressed to (docs/workers.md, "Hosts"). An agent sees the
// hosts it may use; staff see every host with its workers and queue.
export const hostRouter = router({
  list: agentOrStaffProcedure.output(hostListSchema).query(({ ctx }) => listHosts(ctx.db, ctx.viewer)),
});
