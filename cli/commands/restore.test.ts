// strata restore / acquire / export / import as a user runs them: real processes against a
// catalog of each kind (and once through a real HTTP server), real exit codes and output.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Readable } from "node:stream";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { afterAll, beforeAll, expect, it } from "vitest";
import { handleBlobGet } from "../../server/http/blob-routes.ts";
import type { Db } from "../../server/db/client.ts";
import { createTestCatalog, describeEachDatabase, type TestCatalog } from "../../server/testing/databases.ts";
import type { RestoreResult } from "../../server/domain/restore-result.ts";
import { CHECKOUT_FIXTURES, type CapturedCheckout } from "../../server/testing/checkouts.ts";
import { git, removeTemporaryDirectories, temporaryDirectory } from "../../server/testing/repos.ts";
import { makeAgent, uniqueName, type TestAgent } from "../../server/testing/lineage.ts";
import { publishCheckpointCapture } from "../../server/testing/restore.ts";
import { createContextInner } from "../../server/trpc/init.ts";
import { appRouter } from "../../server/trpc/root.ts";
import { RESTORE_EXIT } from "./restore.ts";

afterAll(removeTemporaryDirectories);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI without blocking this process (the HTTP test serves from it). */
function strata(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["cli/strata.mjs", ...args], {
      env: { NODE_ENV: "test", PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function toRequest(req: IncomingMessage, base: string): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(new URL(req.url ?? "/", base), {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    duplex: "half",
  } as RequestInit);
}

/** The app's tRPC and blob routes behind node:http. */
function serve(db: Db): Promise<{ url: string; server: Server }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const request = toRequest(req, `http://${req.headers.host ?? "localhost"}`);
    const blob = /^\/api\/blobs\/([^/]+)$/.exec(new URL(request.url).pathname);
    const handled = blob
      ? handleBlobGet(db, request, blob[1] ?? "")
      : fetchRequestHandler({
          endpoint: "/api/trpc",
          req: request,
          router: appRouter,
          createContext: () =>
            createContextInner({
              db,
              authorization: request.headers.get("authorization"),
              user: null,
            }),
        });
    void handled.then(async (response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }),
    ),
  );
}

function machine() {
  const dir = temporaryDirectory("strata-machine-");
  return { into: join(dir, "restored"), stateDir: join(dir, "state") };
}

describeEachDatabase("strata restore, acquire, export and import", (catalog, kind) => {
  let agent: TestAgent;
  let env: Record<string, string>;
  let captured: CapturedCheckout;
  let snapshotId: string;
  let workContextId: string;
  const repository = `example.test/acme/${uniqueName("cli")}`;

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "cli-restorer");
    env = { DATABASE_URL: catalog().url };
    captured = await CHECKOUT_FIXTURES[2]!.make();
    workContextId = uniqueName("wc");
    snapshotId = await publishCheckpointCapture(
      catalog().db,
      agent.scope,
      {
        repository: { identity: repository },
        backendKind: "modal",
        baseImage: "img",
        workContextId,
        observedHeadId: null,
      },
      captured.manifest,
      captured.blobs,
    );
  }, 120_000);

  it("restores with --json: the result, the timing of each phase, exit 0", async () => {
    const m = machine();
    const run = await strata(
      ["restore", snapshotId, "--into", m.into, "--state-dir", m.stateDir, "--agent", agent.name, "--json"],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { snapshotId: string; path: string; result: RestoreResult };
    expect(out).toMatchObject({ snapshotId, path: m.into, result: { status: "restored", holds: { stage: "exact" } } });
    expect(Object.keys(out.result.timings ?? {})).toEqual(
      expect.arrayContaining(["fetch", "reconstruct", "materialize", "verify", "publish"]),
    );
    expect(out.result.timings?.commitsFrom).toBe("bundle");
    git(m.into, ["update-index", "-q", "--really-refresh"]);
    expect(git(m.into, ["write-tree"]).trim()).toBe(captured.manifest.tree);
  });

  it("tells refusals apart by exit code, writing nothing", async () => {
    const m = machine();
    mkdirSync(m.into);
    writeFileSync(join(m.into, "keep.txt"), "mine\n");
    const unsafe = await strata(
      ["restore", snapshotId, "--into", m.into, "--state-dir", m.stateDir, "--agent", agent.name],
      env,
    );
    expect(unsafe.code).toBe(RESTORE_EXIT.UNSAFE_TARGET);
    expect(unsafe.stderr).toContain("UNSAFE_TARGET");
    expect(readFileSync(join(m.into, "keep.txt"), "utf8")).toBe("mine\n");

    const missing = await strata(
      ["restore", "0d3c1a52-8d0e-4a4e-9a56-3f1e8b2c9d71", "--into", machine().into, "--agent", agent.name, "--json"],
      env,
    );
    expect(missing.code).toBe(RESTORE_EXIT.NOT_FOUND);
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: { code: "NOT_FOUND" } });

    const evil = await publishCheckpointCapture(
      catalog().db,
      agent.scope,
      {
        repository: { identity: repository },
        backendKind: "modal",
        baseImage: "img",
        workContextId: uniqueName("wc"),
        observedHeadId: null,
      },
      { ...captured.manifest, remotes: [{ name: "origin", url: "ext::sh -c touch% /tmp/strata-pwned" }] },
      captured.blobs,
    );
    const refused = await strata(["restore", evil, "--into", machine().into, "--agent", agent.name], env);
    expect(refused.code).toBe(RESTORE_EXIT.INVALID_SNAPSHOT);
    expect(refused.stderr).toContain("remotes[0].url");
    expect(refused.stderr).not.toContain("pwned");
  });

  it("restores partly with exit 10, saying what is missing and what to do", async () => {
    const chain = await CHECKOUT_FIXTURES[1]!.make();
    const id = await publishCheckpointCapture(
      catalog().db,
      agent.scope,
      {
        repository: { identity: repository },
        backendKind: "modal",
        baseImage: "img",
        workContextId: uniqueName("wc"),
        observedHeadId: null,
      },
      chain.manifest,
      chain.blobs,
    );
    await catalog().db.blob.deleteMany({ where: { digest: chain.manifest.patches[2]!.digest } });
    const m = machine();
    const run = await strata(["restore", id, "--into", m.into, "--state-dir", m.stateDir, "--agent", agent.name], env);
    expect(run.code, run.stderr).toBe(RESTORE_EXIT.DEGRADED);
    expect(run.stdout).toMatch(/only partly/);
    expect(run.stdout).toMatch(/with 2 of 3 change set\(s\)/);
    expect(run.stdout).toMatch(/Cause: BLOB_MISSING/);
    expect(run.stdout).toMatch(/Next: /);
    expect(run.stdout).toMatch(/fetch \d+\.\d\d s .*reconstruct .*materialize .*verify .*publish \d+\.\d\d s/);
  });

  it("acquires and restores the work context's checkpoint in one step", async () => {
    const m = machine();
    const run = await strata(
      [
        "acquire",
        "--repository",
        repository,
        "--backend",
        "modal",
        "--base-image",
        "img",
        "--work-context",
        workContextId,
        "--into",
        m.into,
        "--host",
        "cli-host",
        "--state-dir",
        m.stateDir,
        "--agent",
        agent.name,
        "--json",
      ],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { path: string; steps: { plan: { rung: string }; reported: string }[] };
    expect(out.path).toBe(m.into);
    expect(out.steps.map((s) => [s.plan.rung, s.reported])).toEqual([["checkpoint", "restored"]]);
    const row = await catalog().db.restore.findFirstOrThrow({ where: { workspace: m.into } });
    expect(row).toMatchObject({ outcome: "restored", host: "cli-host", snapshotId });
  });

  it("exports to a file and imports it into another catalog; a damaged file exits 17 and stores nothing", async () => {
    const file = join(temporaryDirectory("strata-export-"), "snapshot.strata");
    const exported = await strata(["export", snapshotId, "-o", file, "--agent", agent.name], env);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/Exported snapshot .*blob\(s\)/);

    const other: TestCatalog = await createTestCatalog(kind === "sqlite" ? "postgres" : "sqlite");
    try {
      const importer = await makeAgent(other.db, "cli-importer");
      const damaged = join(temporaryDirectory("strata-export-"), "damaged.strata");
      const bytes = readFileSync(file);
      bytes[bytes.length - 200] = (bytes[bytes.length - 200] ?? 0) ^ 0x01;
      writeFileSync(damaged, bytes);
      const bad = await strata(["import", damaged, "--agent", importer.name], { DATABASE_URL: other.url });
      expect(bad.code).toBe(RESTORE_EXIT.BAD_FILE);
      expect(await other.db.blob.count()).toBe(0);
      expect(await other.db.snapshot.count()).toBe(0);

      const good = await strata(["import", file, "--agent", importer.name, "--json"], { DATABASE_URL: other.url });
      expect(good.code, good.stderr).toBe(0);
      expect(JSON.parse(good.stdout)).toMatchObject({ snapshotId, created: true, state: "ready" });
    } finally {
      await other.drop();
    }
  });

  it("restores through a Strata server over HTTP with an agent token", async () => {
    const { url, server } = await serve(catalog().db);
    try {
      const m = machine();
      const run = await strata(["restore", snapshotId, "--into", m.into, "--state-dir", m.stateDir, "--json"], {
        STRATA_SERVER_URL: url,
        STRATA_TOKEN: agent.token,
      });
      expect(run.code, run.stderr).toBe(0);
      expect((JSON.parse(run.stdout) as { result: RestoreResult }).result.status).toBe("restored");

      const refused = await strata(["restore", snapshotId, "--into", machine().into], {
        STRATA_SERVER_URL: url,
        STRATA_TOKEN: "strata_not-a-real-token-at-all-000000000000000000",
      });
      expect(refused.code).toBe(RESTORE_EXIT.UNAVAILABLE);
      expect(refused.stderr).toContain("UNAUTHORIZED");
    } finally {
      server.close();
    }
  });
});
