import type { z } from "zod";
import { createCallerFactory, registerInputSchemas, router } from "./init.ts";
import { browseRouter } from "./routers/browse.ts";
import { healthProcedure } from "./routers/health.ts";
import { baselineRouter } from "./routers/baseline.ts";
import { checkpointRouter } from "./routers/checkpoint.ts";
import { workspaceRouter } from "./routers/workspace.ts";
import { lineageRouter } from "./routers/lineage.ts";
import { snapshotRouter } from "./routers/snapshot.ts";
import { pinRouter } from "./routers/pin.ts";
import { blobRouter } from "./routers/blob.ts";
import { gcRouter } from "./routers/gc.ts";
import { dashboardRouter } from "./routers/dashboard.ts";
import { degradedRestoreRouter, restoreAliasRouter } from "./routers/degraded-restore.ts";
import { jobRouter } from "./routers/job.ts";
import { hostRouter } from "./routers/host.ts";
import { dependencyCacheRouter } from "./routers/dependency-cache.ts";

export const appRouter = router({
  health: healthProcedure,
  browse: browseRouter,
  baseline: baselineRouter,
  checkpoint: checkpointRouter,
  workspace: workspaceRouter,
  lineage: lineageRouter,
  snapshot: snapshotRouter,
  pin: pinRouter,
  blob: blobRouter,
  gc: gcRouter,
  dashboard: dashboardRouter,
  degradedRestore: degradedRestoreRouter,
  /** Old names of degradedRestore.list and .discard, kept for one release (docs/api.md). */
  restore: restoreAliasRouter,
  job: jobRouter,
  host: hostRouter,
  dependencyCache: dependencyCacheRouter,
});

const procedures = appRouter._def.procedures as unknown as Record<
  string,
  { _def: { inputs: z.ZodType[] } } | undefined
>;
registerInputSchemas((path) => procedures[path]?._def.inputs[0]);

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
