import { authenticateAgent } from "../../auth/agents.ts";
import { StrataError } from "../../domain/errors.ts";
import { hostListSchema, listHosts } from "../../jobs/worker-hosts.ts";
import { publicProcedure, router } from "../init.ts";

/**
 * Agents and signed-in staff alike (every role may read the dashboard), each answered with their
 * own view: a session makes the caller staff, else an agent token is needed. Listed as an agent
 * procedure, so the REST surface and its document carry it.
 */
const agentOrStaffProcedure = publicProcedure.meta({ audience: "agent" }).use(async ({ ctx, next }) => {
  if (ctx.user) return next({ ctx: { viewer: { user: ctx.user } } });
  const agent = await authenticateAgent(ctx.db, ctx.authorization);
  if (!agent) {
    throw new StrataError("UNAUTHORIZED", "A valid agent token (or a dashboard session) is required.", {
      hint: "Send Authorization: Bearer <token>; `strata agent create NAME` prints a token.",
    });
  }
  return next({ ctx: { viewer: { agent } } });
});

// Worker hosts: the names jobs may be addressed to (docs/workers.md, "Hosts").
export const hostRouter = router({
  list: agentOrStaffProcedure.output(hostListSchema).query(({ ctx }) => listHosts(ctx.db, ctx.viewer)),
});
