import { createCallerFactory, router } from "./init.ts";
import { browseRouter } from "./routers/browse.ts";
import { healthProcedure } from "./routers/health.ts";
import { baselineRouter } from "./routers/baseline.ts";
import { checkpointRouter } from "./routers/checkpoint.ts";
import { workspaceRouter } from "./routers/workspace.ts";
import { lineageRouter } from "./routers/lineage.ts";
import { snapshotRouter } from "./routers/snapshot.ts";

export const appRouter = router({
  health: healthProcedure,
  browse: browseRouter,
  baseline: baselineRouter,
  checkpoint: checkpointRouter,
  workspace: workspaceRouter,
  lineage: lineageRouter,
  snapshot: snapshotRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
