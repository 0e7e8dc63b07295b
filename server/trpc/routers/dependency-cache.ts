import {
  dependencyCacheSchema,
  findDependencyCache,
  findDependencyCacheInput,
  publishDependencyCache,
  publishDependencyCacheInput,
  publishDependencyCacheResultSchema,
} from "../../caches/dependency-caches.ts";
import { z } from "zod";
import { agentProcedure, router } from "../init.ts";

export const dependencyCacheRouter = router({
  publish: agentProcedure
    .input(publishDependencyCacheInput)
    .output(publishDependencyCacheResultSchema)
    .mutation(({ ctx, input }) => publishDependencyCache(ctx.db, { ...input, agent: ctx.agent })),
  find: agentProcedure
    .input(findDependencyCacheInput)
    .output(z.object({ exact: dependencyCacheSchema.nullable(), latest: dependencyCacheSchema.nullable() }))
    .query(({ ctx, input }) => findDependencyCache(ctx.db, { ...input, agent: ctx.agent })),
});
