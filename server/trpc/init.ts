// tRPC in three parts: 1. context, 2. initialization (transformer, error formatter),
// 3. procedures. Routers build on the procedures exported here.
import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { getCatalog, type CatalogHandle, type Db } from "../services/catalog.ts";
import { ERROR_CODES, StrataError, type StrataErrorShape } from "../domain/errors.ts";
import type { UserRole, UserScope } from "../domain/scope.ts";
import { authenticateAgent } from "../services/agents.ts";
import { getAuth, sessionUser } from "../services/auth.ts";

// 1. Context ----------------------------------------------------------------------------------

export interface ContextInner {
  db: Db;
  databaseKind: CatalogHandle["kind"];
  /** The raw Authorization header; agentProcedure resolves it to an agent. */
  authorization: string | null;
  /** The signed-in dashboard user, if any (resolved from the session cookie). */
  user: UserScope | null;
}

/** Builds a context without a request, so tests can make a caller over a test database. */
export function createContextInner(opts: ContextInner): ContextInner {
  return opts;
}

export async function createContext({ req }: { req: Request }): Promise<ContextInner> {
  const catalog = getCatalog();
  // Only a session cookie signs a user in; an Authorization header never does.
  const user = req.headers.has("cookie") ? await sessionUser(getAuth(), req.headers) : null;
  return createContextInner({
    db: catalog.db,
    databaseKind: catalog.kind,
    authorization: req.headers.get("authorization"),
    user,
  });
}

export type Context = ContextInner;

// 2. Initialization ---------------------------------------------------------------------------

function toStrataShape(error: TRPCError): StrataErrorShape | null {
  const cause = error.cause;
  if (cause instanceof StrataError) return cause.toJSON();
  if (cause instanceof ZodError) {
    return {
      code: "INVALID_INPUT",
      message: "The input is not valid.",
      hint: cause.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; "),
      retryable: false,
      data: null,
    };
  }
  return null;
}

const t = initTRPC.context<Context>().create({
  transformer: superjson,
  errorFormatter({ shape, error }) {
    return { ...shape, data: { ...shape.data, strata: toStrataShape(error) } };
  },
});

/** Maps a thrown StrataError to the tRPC code of its kind; anything else stays internal. */
const mapErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof StrataError) {
    const cause = result.error.cause;
    throw new TRPCError({ code: ERROR_CODES[cause.code].status, message: cause.message, cause });
  }
  return result;
});

// 3. Procedures -------------------------------------------------------------------------------

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure.use(mapErrors);

/** Procedures agents call with `Authorization: Bearer <token>`; ctx.agent scopes every query. */
export const agentProcedure = publicProcedure.use(async ({ ctx, next }) => {
  const agent = await authenticateAgent(ctx.db, ctx.authorization);
  if (!agent) {
    throw new StrataError("UNAUTHORIZED", "A valid agent token is required.", {
      hint: "Send Authorization: Bearer <token>; `strata agent create NAME` prints a token.",
    });
  }
  return next({ ctx: { ...ctx, agent } });
});

/** Procedures for signed-in dashboard users with one of the given roles. Agent tokens never pass. */
export function staffProcedure(roles: readonly UserRole[]) {
  return publicProcedure.use(async ({ ctx, next }) => {
    if (!ctx.user) throw new StrataError("UNAUTHORIZED", "Sign in to the dashboard first.");
    if (!roles.includes(ctx.user.role)) {
      throw new StrataError("FORBIDDEN", `This action needs the ${roles.join(" or ")} role.`);
    }
    return next({ ctx: { ...ctx, user: ctx.user } });
  });
}
