// Dashboard sign-in (better-auth, email and password) on the catalog database. Users are made
// by `strata user create`; nobody signs up through the web. Agent tokens are a different
// mechanism and never sign anyone in here.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { betterAuth, type BetterAuthOptions } from "better-auth";
import { prismaAdapter } from "better-auth/adapters/prisma";
import { hashPassword } from "better-auth/crypto";
import { z } from "zod";
import { loadConfig, type Config } from "../config/config.ts";
import { errorFields, logger, scrubText } from "../log/logger.ts";
import type { CatalogHandle, Db } from "../db/client.ts";
import {
  asCatalogUnavailable,
  catalogUnavailable,
  isUniqueViolation,
  OUTAGE_RETRY_AFTER_SECONDS,
} from "../db/errors.ts";
import { StrataError } from "../domain/errors.ts";
import { trustUser, USER_ROLES, type UserRole, type UserScope } from "../domain/scope.ts";
import { getCatalog } from "../db/catalog.ts";
import { newestAppliedMigration } from "../db/health.ts";
import { hashSessionTokens } from "./session-token-hashing.ts";

const SESSION_DAYS = 7;

/** The secret that signs session cookies: the configured one, else one kept in the data dir. */
function authSecret(config: Config): string {
  if (config.authSecret) return config.authSecret;
  const file = path.join(config.dataDir, "auth-secret");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(config.dataDir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return secret;
}

/** A value better-auth logs beside its message, as a log field: an error's code and message, else scrubbed text. */
function logArgument(value: unknown): unknown {
  if (value instanceof Error) return errorFields(value);
  if (typeof value === "string") return scrubText(value);
  try {
    return scrubText(JSON.stringify(value) ?? String(value));
  } catch {
    return scrubText(String(value));
  }
}

/** better-auth's log lines go through the process's JSON logger (its own writes coloured text to stderr). */
function authLogger(config: Config): NonNullable<BetterAuthOptions["logger"]> {
  if (config.logLevel === "silent") return { disabled: true };
  return {
    level: config.logLevel,
    log(level, message, ...args) {
      const fields = { component: "better-auth", ...(args.length > 0 ? { args: args.map(logArgument) } : {}) };
      logger()[level](fields, scrubText(message));
    },
  };
}

export function createAuth(catalog: Pick<CatalogHandle, "db" | "dialect">, config: Config) {
  const origins = new Set([config.publicUrl, `http://localhost:${config.port}`, `http://127.0.0.1:${config.port}`]);
  const database = prismaAdapter(catalog.db, { provider: catalog.dialect.prismaProvider });
  return betterAuth({
    appName: "Strata",
    baseURL: config.publicUrl,
    basePath: "/api/auth",
    secret: authSecret(config),
    trustedOrigins: [...origins],
    database: (options: BetterAuthOptions) => hashSessionTokens(database(options)),
    emailAndPassword: { enabled: true, disableSignUp: true, minPasswordLength: 12 },
    user: {
      modelName: "user",
      additionalFields: { role: { type: "string", required: true, input: false } },
    },
    rateLimit: {
      enabled: true,
      // Counted in the catalog (rate_limits), so every app instance shares one count per address.
      storage: "database",
      window: 60,
      max: 300,
      customRules: { "/sign-in/email": { window: 60, max: config.signInAttemptsPerMinute } },
    },
    session: { expiresIn: SESSION_DAYS * 24 * 3600, updateAge: 24 * 3600 },
    advanced: { database: { generateId: () => crypto.randomUUID() } },
    telemetry: { enabled: false },
    logger: authLogger(config),
  });
}

export type Auth = ReturnType<typeof createAuth>;

const globalRef = globalThis as unknown as { __strataAuth?: Auth };

/** The web app's auth instance, built on first use. */
export function getAuth(): Auth {
  globalRef.__strataAuth ??= createAuth(getCatalog(), loadConfig());
  return globalRef.__strataAuth;
}

function toScope(user: { id: string; email: string; role?: unknown }): UserScope | null {
  const role = USER_ROLES.find((r) => r === user.role);
  return role ? trustUser(user.id, user.email, role) : null;
}

/**
 * The signed-in user of a request, from its session cookie; null when there is no valid session.
 * When the session could not be checked because the catalog is unavailable, it throws UNAVAILABLE:
 * an outage never signs anyone out.
 */
export async function sessionUser(auth: Auth, headers: Headers): Promise<UserScope | null> {
  const session = await auth.api.getSession({ headers }).catch((error: unknown) => {
    const outage = asCatalogUnavailable(error);
    if (outage) throw outage;
    return null;
  });
  return session ? toScope(session.user) : null;
}

/** What the dashboard knows of a request's viewer: signed in, not signed in, or could not check. */
export type DashboardViewer =
  { state: "signed-in"; user: UserScope } | { state: "signed-out" } | { state: "unavailable" };

/** The dashboard's question before it renders a page (app/(dashboard)/layout.tsx). */
export async function dashboardViewer(auth: Auth, headers: Headers): Promise<DashboardViewer> {
  try {
    const user = await sessionUser(auth, headers);
    return user ? { state: "signed-in", user } : { state: "signed-out" };
  } catch (error) {
    if (error instanceof StrataError && error.code === "UNAVAILABLE") return { state: "unavailable" };
    throw error;
  }
}

/** True when the catalog answers a small query (its migration history's newest row). */
async function catalogAnswers(db: Db): Promise<boolean> {
  try {
    await newestAppliedMigration(db);
    return true;
  } catch {
    return false;
  }
}

/** The typed 503 the auth routes answer in an outage (the blob routes' body shape). */
function unavailableResponse(error: StrataError): Response {
  return Response.json(
    { error: error.toJSON() },
    { status: 503, headers: { "retry-after": String(OUTAGE_RETRY_AFTER_SECONDS) } },
  );
}

/**
 * The /api/auth routes: better-auth's handler, except in a catalog outage, which it answers as
 * an untyped 500 (its message, or none): then the answer is UNAVAILABLE, 503 with Retry-After.
 * A 5xx is checked with one small query, so a failure that is not an outage stays as it was.
 */
export async function handleAuthRequest(auth: Auth, db: Db, req: Request): Promise<Response> {
  let response: Response;
  try {
    response = await auth.handler(req);
  } catch (error) {
    const outage = asCatalogUnavailable(error);
    if (outage) return unavailableResponse(outage);
    throw error;
  }
  if (response.status < 500 || (await catalogAnswers(db))) return response;
  return unavailableResponse(catalogUnavailable());
}

export const createUserInput = z.object({
  email: z.email().transform((e) => e.toLowerCase()),
  role: z.enum(USER_ROLES as [UserRole, ...UserRole[]]),
  name: z.string().trim().min(1).max(200).optional(),
  password: z.string().min(12, "must be at least 12 characters").max(200).optional(),
});

/** Creates a dashboard user with an email-and-password sign-in. Returns the password once. */
export async function createUser(db: Db, input: z.input<typeof createUserInput>) {
  const opts = createUserInput.parse(input);
  const password = opts.password ?? randomBytes(15).toString("base64url");
  const passwordHash = await hashPassword(password);
  try {
    // better-auth finds the password account by (provider "credential", account id = user id).
    const userId = crypto.randomUUID();
    const user = await db.user.create({
      data: {
        id: userId,
        email: opts.email,
        name: opts.name ?? opts.email.split("@")[0]!,
        role: opts.role,
        accounts: {
          create: { id: crypto.randomUUID(), accountId: userId, providerId: "credential", password: passwordHash },
        },
      },
    });
    return { id: user.id, email: user.email, role: opts.role, password, generated: opts.password === undefined };
  } catch (error) {
    if (isUniqueViolation(error)) throw new StrataError("CONFLICT", `A user with email ${opts.email} already exists.`);
    throw error;
  }
}

/** Changes a user's role; every open session sees the new role on its next request. */
export async function setUserRole(db: Db, input: { email: string; role: UserRole }) {
  const result = await db.user.updateMany({ where: { email: input.email.toLowerCase() }, data: { role: input.role } });
  if (result.count === 0) throw new StrataError("NOT_FOUND", `No user has the email ${input.email}.`);
}

export async function listUsers(db: Db) {
  return db.user.findMany({
    orderBy: { email: "asc" },
    select: { id: true, email: true, name: true, role: true, createdAt: true },
  });
}
