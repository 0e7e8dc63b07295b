import { mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../config/config.ts";
import { sqliteDialect } from "../db/dialect.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { createContextInner } from "../trpc/init.ts";
import { createCaller } from "../trpc/root.ts";
import { createAgent } from "./agents.ts";
import {
  createAuth,
  createUser,
  dashboardViewer,
  handleAuthRequest,
  sessionUser,
  setUserRole,
  type Auth,
} from "./dashboard-auth.ts";

const dataDir = mkdtempSync(path.join(os.tmpdir(), "strata-auth-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Signs in through better-auth's HTTP handler, as the browser does (from `address`, when given). */
async function signIn(auth: Auth, email: string, password: string, address?: string): Promise<Response> {
  return auth.handler(
    new Request("http://localhost:3000/api/auth/sign-in/email", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        origin: "http://localhost:3000",
        ...(address ? { "x-forwarded-for": address } : {}),
      },
      body: JSON.stringify({ email, password }),
    }),
  );
}

function cookieOf(response: Response): string {
  return response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
}

describeEachDatabase("dashboard sign-in", (catalog, kind) => {
  let auth: Auth;
  beforeAll(() => {
    auth = createAuth(catalog(), loadConfig({ STRATA_DATA_DIR: dataDir, STRATA_SIGNIN_ATTEMPTS_PER_MINUTE: "1000" }));
  });

  it("signs a user in with the password `strata user create` made, with their role", async () => {
    const user = await createUser(catalog().db, { email: `Ops-${kind}@Example.com`, role: "operator" });
    expect(user.generated).toBe(true);
    expect(user.password.length).toBeGreaterThanOrEqual(20);
    const response = await signIn(auth, `ops-${kind}@example.com`, user.password);
    expect(response.status).toBe(200);
    const scope = await sessionUser(auth, new Headers({ cookie: cookieOf(response) }));
    expect(scope).toMatchObject({ email: `ops-${kind}@example.com`, role: "operator" });
  });

  it("refuses a wrong password and an unknown email alike", async () => {
    await createUser(catalog().db, {
      email: `sup-${kind}@example.com`,
      role: "support",
      password: "correct horse battery",
    });
    expect((await signIn(auth, `sup-${kind}@example.com`, "wrong horse battery")).status).toBe(401);
    expect((await signIn(auth, `nobody-${kind}@example.com`, "correct horse battery")).status).toBe(401);
  });

  it("stores neither the password nor the session token as they are", async () => {
    const password = `a-long-password-${kind}-1234`;
    await createUser(catalog().db, { email: `adm-${kind}@example.com`, role: "admin", password });
    const response = await signIn(auth, `adm-${kind}@example.com`, password);
    const cookie = cookieOf(response);
    const rawToken = decodeURIComponent(cookie.split("=")[1] ?? "").split(".")[0]!;
    expect(rawToken.length).toBeGreaterThan(16);
    const sessions = await catalog().db.session.findMany();
    const accounts = await catalog().db.account.findMany();
    const stored = JSON.stringify([sessions, accounts]);
    expect(stored).not.toContain(rawToken);
    expect(stored).not.toContain(password);
    // And the session still works, because lookups hash the presented token.
    expect(await sessionUser(auth, new Headers({ cookie }))).toMatchObject({ role: "admin" });
  });

  it("lets nobody sign up through the web", async () => {
    const response = await auth.handler(
      new Request("http://localhost:3000/api/auth/sign-up/email", {
        method: "POST",
        headers: { "content-type": "application/json", origin: "http://localhost:3000" },
        body: JSON.stringify({ email: `x-${kind}@example.com`, password: "long enough password", name: "x" }),
      }),
    );
    expect(response.ok).toBe(false);
    expect(await catalog().db.user.count({ where: { email: `x-${kind}@example.com` } })).toBe(0);
  });

  it("sees a role change on the next request", async () => {
    const user = await createUser(catalog().db, { email: `mover-${kind}@example.com`, role: "operator" });
    const cookie = cookieOf(await signIn(auth, user.email, user.password));
    await setUserRole(catalog().db, { email: user.email, role: "support" });
    expect(await sessionUser(auth, new Headers({ cookie }))).toMatchObject({ role: "support" });
  });

  it("refuses a duplicate email, an unknown role and a short password", async () => {
    await createUser(catalog().db, { email: `dup-${kind}@example.com`, role: "operator" });
    await expect(createUser(catalog().db, { email: `DUP-${kind}@example.com`, role: "admin" })).rejects.toMatchObject({
      code: "CONFLICT",
    });
    await expect(
      createUser(catalog().db, { email: `r-${kind}@example.com`, role: "root" as "admin" }),
    ).rejects.toThrow();
    await expect(
      createUser(catalog().db, { email: `p-${kind}@example.com`, role: "admin", password: "short" }),
    ).rejects.toThrow(/12 characters/);
  });

  it("opens dashboard reads to every signed-in role, and never to an agent token or nobody", async () => {
    const { token } = await createAgent(catalog().db, { name: `agent-${kind}` });
    const caller = (opts: { authorization?: string; user?: Awaited<ReturnType<typeof sessionUser>> }) =>
      createCaller(
        createContextInner({
          db: catalog().db,
          authorization: opts.authorization ?? null,
          user: opts.user ?? null,
        }),
      );
    await expect(caller({}).browse.repositories()).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    await expect(caller({ authorization: `Bearer ${token}` }).browse.repositories()).rejects.toMatchObject({
      code: "UNAUTHORIZED",
    });
    for (const role of ["operator", "support", "admin"] as const) {
      const u = await createUser(catalog().db, { email: `${role}-reader-${kind}@example.com`, role });
      const scope = await sessionUser(auth, new Headers({ cookie: cookieOf(await signIn(auth, u.email, u.password)) }));
      expect(await caller({ user: scope }).browse.repositories()).toMatchObject({ items: expect.any(Array) });
    }
  });

  it("limits sign-in attempts per address across app instances (the count is in the catalog)", async () => {
    // Two instances of the app over one catalog, each allowing 3 attempts a minute.
    const config = loadConfig({ STRATA_DATA_DIR: dataDir, STRATA_SIGNIN_ATTEMPTS_PER_MINUTE: "3" });
    const [first, second] = [createAuth(catalog(), config), createAuth(catalog(), config)];
    const user = await createUser(catalog().db, { email: `limited-${kind}@example.com`, role: "support" });
    const address = kind === "sqlite" ? "203.0.113.7" : "203.0.113.8";
    const wrong = (auth: Auth) => signIn(auth, user.email, "not the password at all", address);
    expect((await wrong(first)).status).toBe(401);
    expect((await wrong(second)).status).toBe(401);
    expect((await wrong(first)).status).toBe(401);
    // The fourth attempt from that address is refused by either instance, even with the right password.
    expect((await wrong(second)).status).toBe(429);
    expect((await signIn(first, user.email, user.password, address)).status).toBe(429);
    // Another address is counted on its own.
    expect((await signIn(second, user.email, user.password, "198.51.100.4")).status).toBe(200);
  });

  it("tells signed out (no session, an unknown one) from signed in; the auth route passes answers through when the catalog answers", async () => {
    const user = await createUser(catalog().db, { email: `viewer-${kind}@example.com`, role: "support" });
    const cookie = cookieOf(await signIn(auth, user.email, user.password));
    expect(await dashboardViewer(auth, new Headers({ cookie }))).toMatchObject({
      state: "signed-in",
      user: { email: user.email, role: "support" },
    });
    expect(await dashboardViewer(auth, new Headers())).toEqual({ state: "signed-out" });
    const forged = new Headers({ cookie: "better-auth.session_token=not-a-session.forged" });
    expect(await dashboardViewer(auth, forged)).toEqual({ state: "signed-out" });
    // A wrong password stays better-auth's own 401 through the route (outages: catalog-outage-*.test.ts).
    const wrong = new Request("http://localhost:3000/api/auth/sign-in/email", {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://localhost:3000" },
      body: JSON.stringify({ email: user.email, password: "not the password at all" }),
    });
    const answer = await handleAuthRequest(auth, catalog().db, wrong);
    expect(answer.status).toBe(401);
    expect(answer.headers.get("retry-after")).toBeNull();
  });
});

it("keeps the generated cookie secret private to its owner", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "strata-secret-"));
  try {
    createAuth(
      { db: {} as never, dialect: sqliteDialect(() => Promise.reject(new Error("no database"))) },
      loadConfig({ STRATA_DATA_DIR: dir }),
    );
    expect(statSync(path.join(dir, "auth-secret")).mode & 0o777).toBe(0o600);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
