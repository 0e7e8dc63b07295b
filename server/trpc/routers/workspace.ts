import { acquireWorkspace, acquireWorkspaceInput } from "../../acquire/acquire-workspace.ts";
import { reportRestore, reportRestoreInput } from "../../restore/report-restore.ts";
import { reportRestoreResultSchema, restorePlanSchema } from "../../domain/views.ts";
import { agentProcedure, router } from "../init.ts";

export const workspaceRouter = router({
  acquire: agentProcedure
    .input(acquireWorkspaceInput)
    .output(restorePlanSchema)
    .mutation(({ ctx, input }) => acquireWorkspace(ctx.db, { ...input, agent: ctx.agent })),
  reportRestore: agentProcedure
    .input(reportRestoreInput)
    .output(reportRestoreResultSchema)
    .mutation(({ ctx, input }) => reportRestore(ctx.db, { ...input, agent: ctx.agent })),
});
