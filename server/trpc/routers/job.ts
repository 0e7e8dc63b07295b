import { z } from "zod";
import { jobViewSchema } from "../../domain/jobs.ts";
import { restorePlanSchema } from "../../domain/views.ts";
import {
  cancelJob,
  enqueueCapture,
  enqueueCaptureInput,
  enqueueRestore,
  enqueueRestoreInput,
  getJob,
  listJobs,
  listJobsInput,
} from "../../jobs/agent-jobs.ts";
import { configuredProviders } from "../configured-providers.ts";
import { withIdempotencyKey } from "../idempotency.ts";
import { agentProcedure, router } from "../init.ts";

const jobRef = z.strictObject({ jobId: z.string().min(1).max(100) });

// Worker jobs, for agents, on their own jobs only (another agent's are NOT_FOUND).
export const jobRouter = router({
  enqueueCapture: agentProcedure
    .input(enqueueCaptureInput)
    .output(jobViewSchema)
    .meta({ idempotencyKey: true })
    .mutation((opts) => withIdempotencyKey(opts, (db) => enqueueCapture(db, { ...opts.input, agent: opts.ctx.agent }))),
  enqueueRestore: agentProcedure
    .input(enqueueRestoreInput)
    .output(z.object({ plan: restorePlanSchema, job: jobViewSchema.nullable() }))
    .meta({ idempotencyKey: true })
    .mutation((opts) =>
      withIdempotencyKey(opts, (db) =>
        enqueueRestore(db, { ...opts.input, agent: opts.ctx.agent, providers: configuredProviders() }),
      ),
    ),
  get: agentProcedure
    .input(jobRef)
    .output(jobViewSchema)
    .query(({ ctx, input }) => getJob(ctx.db, { ...input, agent: ctx.agent })),
  list: agentProcedure
    .input(listJobsInput)
    .output(z.array(jobViewSchema))
    .query(({ ctx, input }) => listJobs(ctx.db, { ...input, agent: ctx.agent })),
  cancel: agentProcedure
    .input(jobRef)
    .output(jobViewSchema)
    .mutation(({ ctx, input }) => cancelJob(ctx.db, { ...input, agent: ctx.agent })),
});
