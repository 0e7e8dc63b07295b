import { createCallerFactory, router } from "./init.ts";
import { browseRouter } from "./routers/browse.ts";
import { healthProcedure } from "./routers/health.ts";

export const appRouter = router({
  health: healthProcedure,
  browse: browseRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
