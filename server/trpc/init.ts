// tRPC in three parts: 1. context, 2. initialization (transformer, error formatter),
// 3. procedures. Routers build on the procedures exported here.
import { randomUUID } from "node:crypto";
import { getTRPCErrorFromUnknown, initTRPC, TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import { TRPC_ERROR_CODES_BY_KEY } from "@trpc/server/unstable-core-do-not-import";
import superjson from "superjson";
import { ZodError, type z } from "zod";
import { getCatalog, type Db } from "../db/catalog.ts";
import { asCatalogUnavailable } from "../db/errors.ts";
import { ERROR_CODES, StrataError, type ErrorCode } from "../domain/errors.ts";
import { ROLES, roleMay, type StaffAction, type UserScope } from "../domain/scope.ts";
import { authenticateAgent } from "../auth/agents.ts";
import { getAuth, sessionUser } from "../auth/dashboard-auth.ts";
import { errorFields, logger } from "../log/logger.ts";
import { currentRequest, noteRequestIdentity } from "../log/request-context.ts";
import { assertSafeInput, describeZodIssues, invalidInput, markScanned } from "./input-boundary.ts";

// 1. Context ----------------------------------------------------------------------------------

export interface ContextInner {
  db: Db;
  /** The raw Authorization header; agentProcedure resolves it to an agent. */
  authorization: string | null;
  /** The signed-in dashboard user, if any (resolved from the session cookie). */
  user: UserScope | null;
  /** The raw Idempotency-Key header: creating agent calls answer a retry once (idempotency.ts). */
  idempotencyKey?: string | null;
}

/** Builds a context without a request, so tests can make a caller over a test database. */
export function createContextInner(opts: ContextInner): ContextInner {
  return opts;
}

export async function createContext({ req }: { req: { headers: Headers } }): Promise<ContextInner> {
  const catalog = getCatalog();
  // Only a session cookie signs a user in; an Authorization header never does. In an outage the
  // lookup throws UNAVAILABLE (never "signed out"), which the error formatter answers as a 503.
  const user = req.headers.has("cookie") ? await sessionUser(getAuth(), req.headers) : null;
  if (user) noteRequestIdentity({ userId: user.userId });
  return createContextInner({
    db: catalog.db,
    authorization: req.headers.get("authorization"),
    user,
    idempotencyKey: req.headers.get("idempotency-key"),
  });
}

export type Context = ContextInner;

// 2. Initialization ---------------------------------------------------------------------------

/**
 * What a procedure says of itself, for the REST surface and its OpenAPI document
 * (server/openapi): who calls it (set by the procedures below), and whether it honours an
 * Idempotency-Key (the creating calls that run through withIdempotencyKey).
 */
export interface ProcedureMeta {
  audience?: "public" | "agent" | "staff";
  idempotencyKey?: boolean;
}

/** superjson, behind the input boundary: raw JSON is checked before superjson walks it. */
const transformer = {
  input: {
    serialize: (value: unknown) => superjson.serialize(value),
    deserialize: (raw: unknown) => {
      const envelope = raw as Record<string, unknown> | null;
      if (
        raw !== undefined &&
        (typeof raw !== "object" ||
          raw === null ||
          Array.isArray(raw) ||
          Object.keys(envelope ?? {}).some((k) => k !== "json" && k !== "meta"))
      ) {
        throw invalidInput([
          {
            path: [],
            problem: "not_superjson",
            expected: '{"json": …}',
            message: 'The input must be superjson-encoded: {"json": …}.',
          },
        ]);
      }
      assertSafeInput(raw);
      try {
        return markScanned(superjson.deserialize(raw as Parameters<typeof superjson.deserialize>[0]));
      } catch (error) {
        const reason = error instanceof Error ? error.message : "unreadable";
        throw invalidInput([
          {
            path: ["meta"],
            problem: "invalid_meta",
            expected: "superjson meta",
            message: `meta is not valid superjson meta (${reason}).`,
          },
        ]);
      }
    },
  },
  output: superjson,
};

let inputSchemaOf: (path: string) => z.ZodType | undefined = () => undefined;

/** root.ts registers how to find a procedure's input schema, for "did you mean" suggestions. */
export function registerInputSchemas(lookup: (path: string) => z.ZodType | undefined): void {
  inputSchemaOf = lookup;
}

function requestProblem(error: TRPCError, path: string | undefined): StrataError {
  switch (error.code) {
    case "PARSE_ERROR":
    case "BAD_REQUEST":
    case "PAYLOAD_TOO_LARGE":
      return invalidInput([
        {
          path: [],
          problem: "unreadable_request",
          expected: null,
          message: `The request could not be read: ${error.message}`,
        },
      ]);
    case "METHOD_NOT_SUPPORTED":
      return new StrataError("METHOD_NOT_ALLOWED", `${error.message}.`.replace(/\.\.$/, "."), {
        hint: "Queries are GET /api/trpc/<procedure>?input=…; mutations are POST with a JSON body.",
      });
    case "UNSUPPORTED_MEDIA_TYPE":
      return new StrataError("UNSUPPORTED_MEDIA_TYPE", "The request's content type is not supported.", {
        hint: "Send mutations with Content-Type: application/json.",
      });
    case "NOT_FOUND":
      return new StrataError(
        "NOT_FOUND",
        path ? `No procedure is named ${path}.` : "The URL names no procedure: call /api/trpc/<procedure>.",
        { data: { procedure: path ?? null } },
      );
    default:
      return new StrataError(ERROR_CODE_OF_TRPC[error.code] ?? "INTERNAL", error.message);
  }
}

const ERROR_CODE_OF_TRPC: Partial<Record<TRPCError["code"], ErrorCode>> = {
  UNAUTHORIZED: "UNAUTHORIZED",
  FORBIDDEN: "FORBIDDEN",
  CONFLICT: "CONFLICT",
  TIMEOUT: "TIMEOUT",
  CLIENT_CLOSED_REQUEST: "ABORTED",
};

/** The StrataError a client receives for any tRPC error; a truly unexpected one is logged once. */
function toStrataError(error: TRPCError, path: string | undefined): StrataError {
  const cause = error.cause;
  if (cause instanceof StrataError) return cause;
  if (cause instanceof ZodError) {
    return invalidInput(
      describeZodIssues(cause.issues, { procedure: path, schema: path ? inputSchemaOf(path) : undefined }),
    );
  }
  if (error.code !== "INTERNAL_SERVER_ERROR") return requestProblem(error, path);
  const outage = asCatalogUnavailable(cause);
  if (outage) return outage;
  // The request's own id (its X-Request-Id and log line) when served over HTTP.
  const requestId = currentRequest()?.id ?? randomUUID();
  logger().error({ reqId: requestId, procedure: path ?? null, err: errorFields(cause ?? error) }, "request failed");
  return new StrataError("INTERNAL", `The server failed to answer (request ${requestId}).`, {
    hint: "Retry; if it keeps failing, give an operator the request id.",
    data: { requestId },
  });
}

const withMeta = initTRPC.context<Context>().meta<ProcedureMeta>();
const t = withMeta.create({
  transformer,
  errorFormatter({ shape, error, path }) {
    const strata = toStrataError(error, path);
    const { stack: _stack, ...data } = shape.data;
    if (error.code === "INTERNAL_SERVER_ERROR" && strata.code !== "INTERNAL") {
      // Failed outside a procedure (making the context: the session lookup in an outage), so the
      // gate did not map it: the answer still carries the code and HTTP status of its kind.
      const code = ERROR_CODES[strata.code].status;
      const httpStatus = getHTTPStatusCodeFromError(new TRPCError({ code }));
      return {
        ...shape,
        code: TRPC_ERROR_CODES_BY_KEY[code],
        message: strata.message,
        data: { ...data, code, httpStatus, strata: strata.toJSON() },
      };
    }
    return { ...shape, message: strata.message, data: { ...data, strata: strata.toJSON() } };
  },
});

/**
 * A failed call's error as the client gets it: a StrataError becomes the tRPC code of its kind,
 * a catalog outage UNAVAILABLE (503), and a service re-validating its options refuses the input
 * like the procedure's own schema does; null when the error stays as it is (anything else stays
 * internal).
 */
function mappedError(error: TRPCError): TRPCError | null {
  const cause = error.cause;
  const strata = cause instanceof StrataError ? cause : asCatalogUnavailable(cause);
  if (strata) return new TRPCError({ code: ERROR_CODES[strata.code].status, message: strata.message, cause: strata });
  if (cause instanceof ZodError) return new TRPCError({ code: "BAD_REQUEST", message: error.message, cause });
  return null;
}

/**
 * The one middleware every procedure starts with (each tRPC middleware costs a few µs of
 * object copying per call, so the steps share one): every raw input crosses the one boundary
 * (callers too, which skip the transformer), then `admit` decides who may call and adds to the
 * context, and any error of the call, this middleware's or a later one's, is mapped by
 * mappedError.
 */
function gate<Extra extends object>(admit: ((ctx: Context) => Extra | Promise<Extra>) | null) {
  return t.middleware(async ({ ctx, getRawInput, next }) => {
    let extra: Extra | null = null;
    try {
      assertSafeInput(await getRawInput());
      if (admit) extra = await admit(ctx);
    } catch (thrown) {
      const error = getTRPCErrorFromUnknown(thrown);
      throw mappedError(error) ?? error;
    }
    // tRPC merges what `next` is given into the context; spreading it here would copy it twice.
    const result = extra ? await next({ ctx: extra }) : await next();
    const mapped = result.ok ? null : mappedError(result.error);
    if (mapped) throw mapped;
    return result;
  });
}

// 3. Procedures -------------------------------------------------------------------------------

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure.meta({ audience: "public" }).use(gate(null));

/** Procedures agents call with `Authorization: Bearer <token>`; ctx.agent scopes every query. */
export const agentProcedure = t.procedure.meta({ audience: "agent" }).use(
  gate(async (ctx) => {
    const agent = await authenticateAgent(ctx.db, ctx.authorization);
    if (!agent) {
      throw new StrataError("UNAUTHORIZED", "A valid agent token is required.", {
        hint: "Send Authorization: Bearer <token>; `strata agent create NAME` prints a token.",
      });
    }
    return { agent };
  }),
);

/**
 * Procedures agents and signed-in staff both call, each answered with its own view (ctx.viewer):
 * a dashboard session makes the caller staff, else an agent token is needed. Listed with the
 * agent procedures, so the REST surface and its document carry them.
 */
export const agentOrStaffProcedure = t.procedure.meta({ audience: "agent" }).use(
  gate(async (ctx) => {
    if (ctx.user) return { viewer: { user: ctx.user } };
    const agent = await authenticateAgent(ctx.db, ctx.authorization);
    if (!agent) {
      throw new StrataError("UNAUTHORIZED", "A valid agent token (or a dashboard session) is required.", {
        hint: "Send Authorization: Bearer <token>; `strata agent create NAME` prints a token.",
      });
    }
    return { viewer: { agent } };
  }),
);

/** Procedures for signed-in dashboard users whose role may do `action`. Agent tokens never pass. */
function roleProcedure(action: StaffAction) {
  return t.procedure.meta({ audience: "staff" }).use(
    gate((ctx) => {
      if (!ctx.user) throw new StrataError("UNAUTHORIZED", "Sign in to the dashboard first.");
      if (!roleMay(ctx.user.role, action)) {
        throw new StrataError("FORBIDDEN", `This action needs the ${ROLES[action].join(" or ")} role.`);
      }
      return { user: ctx.user };
    }),
  );
}

/** Dashboard reads: every signed-in role. */
export const staffProcedure = roleProcedure("view");
/** Retirement: operators and admins. */
export const retireProcedure = roleProcedure("retire");
/** Forking work contexts from a checkpoint: operators and admins. */
export const forkProcedure = roleProcedure("fork");
/** Discarding degraded restores: support and admins. */
export const discardProcedure = roleProcedure("discard");
/** Garbage collection: admins. */
export const collectProcedure = roleProcedure("collect");
