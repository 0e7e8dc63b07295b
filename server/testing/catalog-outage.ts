// Test support: a real catalog outage seen through the app's own route handlers (the ones Next
// serves: app/api/trpc, app/api/v1, app/api/blobs, app/api/auth) and the dashboard layout's session check.
// PostgreSQL: a private cluster (private-postgres.ts) stopped and started again. SQLite: the
// catalog's directory moved away after the app made its catalog handle but before it first opened
// the file (an open file would stay readable), and moved back.
// The handlers use the process-wide catalog (getCatalog, from DATABASE_URL), one per process,
// so each database kind runs in its own test file (app/api/catalog-outage-*.test.ts).
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as authRoute from "../../app/api/auth/[...all]/route.ts";
import * as blobRoute from "../../app/api/blobs/[digest]/route.ts";
import * as trpcRoute from "../../app/api/trpc/[[...trpc]]/route.ts";
import * as restRoute from "../../app/api/v1/[[...path]]/route.ts";
import { createAgent } from "../auth/agents.ts";
import { createAuth, createUser, dashboardViewer, getAuth } from "../auth/dashboard-auth.ts";
import { loadConfig } from "../config/config.ts";
import { getCatalog } from "../db/catalog.ts";
import { openCatalog, type CatalogHandle, type DatabaseKind } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
import { handleBlobPut } from "../http/blob-routes.ts";
import { catalogOutagePage } from "../http/outage-page.ts";
import { startPrivatePostgres, type PrivatePostgres } from "./private-postgres.ts";

const ORIGIN = "http://localhost:3000";

interface Outage {
  url: string;
  /** Words of the database's address that no answer may contain. */
  secrets: string[];
  begin(): Promise<void>;
  end(): Promise<void>;
  destroy(): Promise<void>;
}

async function postgresOutage(): Promise<Outage> {
  const cluster: PrivatePostgres = await startPrivatePostgres();
  return {
    url: cluster.url,
    secrets: [`127.0.0.1:${cluster.port}`, String(cluster.port)],
    begin: () => cluster.stop(),
    end: () => cluster.start(),
    destroy: () => cluster.destroy(),
  };
}

async function sqliteOutage(): Promise<Outage> {
  const root = mkdtempSync(path.join(os.tmpdir(), "strata-outage-"));
  const dir = path.join(root, "catalog");
  const away = path.join(root, "moved-away");
  mkdirSync(dir);
  return {
    url: `file:${path.join(dir, "catalog.db")}`,
    secrets: [root],
    begin: async () => renameSync(dir, away),
    end: async () => renameSync(away, dir),
    destroy: async () => rmSync(root, { recursive: true, force: true }),
  };
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** The app's answers to every route class, asserted all down during the outage and all up after it. */
export function describeCatalogOutage(kind: DatabaseKind) {
  describe(`a catalog outage [${kind}]`, () => {
    let outage: Outage;
    let seed: CatalogHandle;
    let dataDir: string;
    let token = "";
    let cookie = "";
    let email = "";
    let password = "";
    const stored = randomBytes(64);
    const storedDigest = sha256(stored);

    beforeAll(async () => {
      outage = kind === "postgres" ? await postgresOutage() : await sqliteOutage();
      await migrate(outage.url);
      dataDir = mkdtempSync(path.join(os.tmpdir(), "strata-outage-data-"));
      const env = { DATABASE_URL: outage.url, STRATA_DATA_DIR: dataDir, STRATA_SIGNIN_ATTEMPTS_PER_MINUTE: "1000" };
      Object.assign(process.env, env);
      // The app's catalog handle exists (it opens nothing yet); everything before the outage goes
      // through a handle of its own, so the app first opens the database during the outage (an
      // SQLite file already open would stay readable when its directory goes).
      getCatalog();
      seed = openCatalog(outage.url);
      token = (await createAgent(seed.db, { name: `outage-${kind}` })).token;
      email = `ops-${kind}@example.com`;
      password = (await createUser(seed.db, { email, role: "operator" })).password;
      const signedIn = await createAuth(seed, loadConfig({ ...process.env, ...env })).handler(signIn(email, password));
      expect(signedIn.status).toBe(200);
      cookie = signedIn.headers
        .getSetCookie()
        .map((c) => c.split(";")[0])
        .join("; ");
      const put = await handleBlobPut(seed.db, blobRequest("PUT", storedDigest, stored), storedDigest);
      expect(put.status).toBe(201);
    }, 60_000);

    afterAll(async () => {
      await seed?.close();
      await outage?.destroy();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    function signIn(user: string, secret: string): Request {
      return new Request(`${ORIGIN}/api/auth/sign-in/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: ORIGIN },
        body: JSON.stringify({ email: user, password: secret }),
      });
    }

    function blobRequest(method: "GET" | "PUT", digest: string, body?: Uint8Array<ArrayBuffer>): Request {
      return new Request(`${ORIGIN}/api/blobs/${digest}`, {
        method,
        headers: { authorization: `Bearer ${token}` },
        body,
      });
    }

    const trpc = (pathAndQuery: string, headers: Record<string, string>) =>
      trpcRoute.GET(new Request(`${ORIGIN}/api/trpc/${pathAndQuery}`, { headers }));
    const input = (value: unknown) => encodeURIComponent(JSON.stringify({ json: value }));
    const fresh = randomBytes(32);
    const freshDigest = sha256(fresh);
    const params = (digest: string) => ({ params: Promise.resolve({ digest }) });

    /** One request of each route class, as clients send them. */
    const calls: Record<string, () => Promise<Response>> = {
      "tRPC agent call (plain JSON)": () =>
        trpc(`lineage.list?input=${input({})}`, { authorization: `Bearer ${token}` }),
      "tRPC agent batch (the SDK's link)": () =>
        trpc(
          `lineage.list,lineage.list?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: { json: {} }, 1: { json: {} } }))}`,
          {
            authorization: `Bearer ${token}`,
          },
        ),
      "tRPC dashboard call (session cookie)": () => trpc("dashboard.collection", { cookie }),
      "REST agent call (/api/v1)": () =>
        restRoute.GET(
          new Request(`${ORIGIN}/api/v1/lineage/list?limit=5`, { headers: { authorization: `Bearer ${token}` } }),
        ),
      "blob GET": () => blobRoute.GET(blobRequest("GET", storedDigest), params(storedDigest)),
      "blob PUT": () => blobRoute.PUT(blobRequest("PUT", freshDigest, fresh), params(freshDigest)),
      "auth: session": () => authRoute.GET(new Request(`${ORIGIN}/api/auth/get-session`, { headers: { cookie } })),
      "auth: sign-in": () => authRoute.POST(signIn(email, password)),
    };

    it("answers every route 503 UNAVAILABLE, retryable, with Retry-After and no internal text; the dashboard keeps the session", async () => {
      await outage.begin();
      for (const [name, call] of Object.entries(calls)) {
        const response = await call();
        const body = await response.text();
        expect({ name, status: response.status, retryAfter: response.headers.get("retry-after") }).toEqual({
          name,
          status: 503,
          retryAfter: "3",
        });
        expect(body).toContain('"code":"UNAVAILABLE"');
        expect(body).toContain('"retryable":true');
        expect(body).toContain("The catalog database is unavailable.");
        for (const secret of [...outage.secrets, "Invalid `"])
          expect({ name, body }).not.toEqual({ name, body: expect.stringContaining(secret) });
        expect({ name, body }).not.toEqual({ name, body: expect.stringMatching(/prisma/i) });
      }
      // The dashboard layout's question: the session could not be checked, which is not signed out.
      expect(await dashboardViewer(getAuth(), new Headers({ cookie }))).toEqual({ state: "unavailable" });
      // A dashboard page (proxy.ts asks before it renders): 503, Retry-After, a page that retries.
      const page = await catalogOutagePage();
      expect({ status: page?.status, retryAfter: page?.headers.get("retry-after") }).toEqual({
        status: 503,
        retryAfter: "3",
      });
      const html = await page!.text();
      expect(html).toContain("Catalog unavailable — retrying");
      expect(html).toContain('http-equiv="refresh"');
      for (const secret of outage.secrets) expect(html).not.toContain(secret);
    });

    it("answers the same calls again once the catalog is back, with the same session", async () => {
      await outage.end();
      const statuses = Object.fromEntries(
        await Promise.all(Object.entries(calls).map(async ([name, call]) => [name, (await call()).status] as const)),
      );
      expect(statuses).toEqual({
        "tRPC agent call (plain JSON)": 200,
        "tRPC agent batch (the SDK's link)": 200,
        "tRPC dashboard call (session cookie)": 200,
        "REST agent call (/api/v1)": 200,
        "blob GET": 200,
        "blob PUT": 201,
        "auth: session": 200,
        "auth: sign-in": 200,
      });
      expect(await dashboardViewer(getAuth(), new Headers({ cookie }))).toMatchObject({
        state: "signed-in",
        user: { email, role: "operator" },
      });
      // Pages render again.
      expect(await catalogOutagePage()).toBeNull();
    });
  });
}
