import { acquireWorkspace, acquireWorkspaceInput } from "../../acquire/acquire-workspace.ts";
import { holdWorkspace, holdWorkspaceInput } from "../../lineage/hold-workspace.ts";
import { releaseLiveHold, releaseLiveHoldInput } from "../../lineage/release-live-hold.ts";
import { planResume, planResumeInput } from "../../restore/plan-resume.ts";
import { reportRestore, reportRestoreInput } from "../../restore/report-restore.ts";
import { liveHoldViewSchema } from "../../domain/live-holds.ts";
import { resumePlanSchema } from "../../domain/resume-plan.ts";
import { reportRestoreResultSchema, restorePlanSchema } from "../../domain/views.ts";
import { configuredProviders } from "../configured-providers.ts";
import { withIdempotencyKey } from "../idempotency.ts";
import { agentProcedure, router } from "../init.ts";

export const workspaceRouter = router({
  acquire: agentProcedure
    .input(acquireWorkspaceInput)
    .output(restorePlanSchema)
    .meta({ idempotencyKey: true })
    .mutation((opts) =>
      withIdempotencyKey(opts, (db) =>
        acquireWorkspace(db, { ...opts.input, agent: opts.ctx.agent, providers: configuredProviders() }),
      ),
    ),
  reportRestore: agentProcedure
    .input(reportRestoreInput)
    .output(reportRestoreResultSchema)
    .mutation(({ ctx, input }) => reportRestore(ctx.db, { ...input, agent: ctx.agent })),
  resume: agentProcedure
    .input(planResumeInput)
    .output(resumePlanSchema)
    .query(({ ctx, input }) => planResume(ctx.db, { ...input, agent: ctx.agent })),
  hold: agentProcedure
    .input(holdWorkspaceInput)
    .output(liveHoldViewSchema)
    .mutation(({ ctx, input }) =>
      holdWorkspace(ctx.db, { ...input, agent: ctx.agent, providers: configuredProviders() }),
    ),
  releaseHold: agentProcedure
    .input(releaseLiveHoldInput)
    .output(liveHoldViewSchema)
    .mutation(({ ctx, input }) => releaseLiveHold(ctx.db, { ...input, agent: ctx.agent })),
});
