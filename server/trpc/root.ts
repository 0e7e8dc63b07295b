import type { z } from "zod";
import { createCallerFactory, registerInputSchemas, router } from "./init.ts";
import { browseRouter } from "./routers/browse.ts";
import { healthProcedure } from "./routers/health.ts";
import { baselineRouter } from "./routers/baseline.ts";
import { checkpointRouter } from "./routers/checkpoint.ts";
import { workspaceRouter } from "./routers/workspace.ts";
import { lineageRouter } from "./routers/lineage.ts";
import { snapshotRouter } from "./routers/snapshot.ts";
import { snapshotContentRouter } from "./routers/snapshot-content.ts";
import { pinRouter } from "./routers/pin.ts";
import { blobRouter } from "./routers/blob.ts";
import { gcRouter } from "./routers/gc.ts";
import { dashboardRouter } from "./routers/dashboard.ts";
import { restoreRouter } from "./routers/restore.ts";
import { jobRouter } from "./routers/job.ts";

export const appRouter = router({
  health: healthProcedure,
  browse: browseRouter,
  baseline: baselineRouter,
  checkpoint: checkpointRouter,
  workspace: workspaceRouter,
  lineage: lineageRouter,
  // get/list (lineage) and publish/delete (content) share the namespace.
  snapshot: router({ ...snapshotRouter._def.record, ...snapshotContentRouter._def.record }),
  pin: pinRouter,
  blob: blobRouter,
  gc: gcRouter,
  dashboard: dashboardRouter,
  restore: restoreRouter,
  job: jobRouter,
});

const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { inputs: z.ZodType[] } } | undefined>;
registerInputSchemas((path) => procedures[path]?._def.inputs[0]);

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
