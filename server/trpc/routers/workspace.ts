import { acquireWorkspace, acquireWorkspaceInput } from "../../acquire/acquire-workspace.ts";
import { planResume, planResumeInput } from "../../restore/plan-resume.ts";
import { reportRestore, reportRestoreInput } from "../../restore/report-restore.ts";
import { resumePlanSchema } from "../../domain/resume-plan.ts";
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
  resume: agentProcedure
    .input(planResumeInput)
    .output(resumePlanSchema)
    .query(({ ctx, input }) => planResume(ctx.db, { ...input, agent: ctx.agent })),
});
