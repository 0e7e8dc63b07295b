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
import type { CatalogHandle, Db } from "../db/client.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { StrataError } from "../domain/errors.ts";
import { trustUser, USER_ROLES, type UserRole, type UserScope } from "../domain/scope.ts";
import { getCatalog } from "../db/catalog.ts";
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
      window: 60,
      max: 300,
      customRules: { "/sign-in/email": { window: 60, max: config.signInAttemptsPerMinute } },
    },
    session: { expiresIn: SESSION_DAYS * 24 * 3600, updateAge: 24 * 3600 },
    advanced: { database: { generateId: () => crypto.randomUUID() } },
    telemetry: { enabled: false },
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

/** The signed-in user of a request, from its session cookie; null when there is none. */
export async function sessionUser(auth: Auth, headers: Headers): Promise<UserScope | null> {
  const session = await auth.api.getSession({ headers }).catch(() => null);
  return session ? toScope(session.user) : null;
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
