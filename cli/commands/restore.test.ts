// strata restore / acquire / export / import as a user runs them: real processes against a
// catalog of each kind (and once through a real HTTP server), real exit codes and output.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestCatalog, describeEachDatabase, type TestCatalog } from "../../server/testing/databases.ts";
import type { RestoreResult } from "../../server/domain/restore-result.ts";
import { CHECKOUT_FIXTURES, unpushedOnMovedRemote, type CapturedCheckout } from "../../server/testing/checkouts.ts";
import { git, removeTemporaryDirectories, temporaryDirectory } from "../../server/testing/repos.ts";
import { makeAgent, uniqueName, type TestAgent } from "../../server/testing/lineage.ts";
import { publishCheckpointCapture } from "../../server/testing/restore.ts";
import { RESTORE_EXIT } from "./restore.ts";
import { runStrata } from "../../server/testing/cli.ts";
import { serveApp } from "../../server/testing/http-server.ts";

afterAll(removeTemporaryDirectories);

function machine() {
  const dir = temporaryDirectory("strata-machine-");
  return { into: join(dir, "restored"), stateDir: join(dir, "state") };
}

describeEachDatabase("strata restore, acquire, export and import", (catalog, kind) => {
  let agent: TestAgent;
  let env: Record<string, string>;
  let dataDir: string;
  let captured: CapturedCheckout;
  let snapshotId: string;
  let workContextId: string;
  const repository = `example.test/acme/${uniqueName("cli")}`;

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "cli-restorer");
    dataDir = temporaryDirectory("strata-data-");
    env = { DATABASE_URL: catalog().url, STRATA_DATA_DIR: dataDir };
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
    const run = await runStrata(
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

  it("borrows this host's shared store of the repository by default, none with --no-object-store", async () => {
    const restore = async (extra: string[]) => {
      const m = machine();
      const run = await runStrata(
        ["restore", snapshotId, "--into", m.into, "--state-dir", m.stateDir, "--agent", agent.name, "--json", ...extra],
        env,
      );
      expect(run.code, run.stderr).toBe(0);
      const out = JSON.parse(run.stdout) as { result: RestoreResult };
      return { into: m.into, result: out.result };
    };
    const shared = await restore([]);
    expect(shared.result.objectStore).toMatch(new RegExp(`^${join(dataDir, "objects")}/.+\\.git$`));
    const alternates = readFileSync(join(shared.into, ".git", "objects", "info", "alternates"), "utf8");
    expect(alternates.trim()).toBe(join(shared.result.objectStore!, "objects"));
    const again = await restore([]);
    expect(again.result.objectStore).toBe(shared.result.objectStore);
    expect(again.result.timings?.commitsFrom).not.toBe("remote");

    const none = await restore(["--no-object-store"]);
    expect(none.result.objectStore).toBeNull();
    expect(existsSync(join(none.into, ".git", "objects", "info", "alternates"))).toBe(false);
    git(none.into, ["update-index", "-q", "--really-refresh"]);
    expect(git(none.into, ["write-tree"]).trim()).toBe(captured.manifest.tree);
  }, 120_000);

  it("tells refusals apart by exit code, writing nothing", async () => {
    const m = machine();
    mkdirSync(m.into);
    writeFileSync(join(m.into, "keep.txt"), "mine\n");
    const unsafe = await runStrata(
      ["restore", snapshotId, "--into", m.into, "--state-dir", m.stateDir, "--agent", agent.name],
      env,
    );
    expect(unsafe.code).toBe(RESTORE_EXIT.UNSAFE_TARGET);
    expect(unsafe.stderr).toContain("UNSAFE_TARGET");
    expect(readFileSync(join(m.into, "keep.txt"), "utf8")).toBe("mine\n");

    const missing = await runStrata(
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
    const refused = await runStrata(["restore", evil, "--into", machine().into, "--agent", agent.name], env);
    expect(refused.code).toBe(RESTORE_EXIT.INVALID_SNAPSHOT);
    expect(refused.stderr).toContain("remotes[0].url");
    expect(refused.stderr).not.toContain("pwned");
  });

  it("restores partly with exit 10, saying what is missing and what to do", async () => {
    const chain = await CHECKOUT_FIXTURES[1]!.make();
    const id = await publishAsCheckpoint(chain);
    await catalog().db.blob.deleteMany({ where: { digest: chain.manifest.patches[2]!.digest } });
    const m = machine();
    const run = await runStrata(
      ["restore", id, "--into", m.into, "--state-dir", m.stateDir, "--agent", agent.name],
      env,
    );
    expect(run.code, run.stderr).toBe(RESTORE_EXIT.DEGRADED);
    expect(run.stdout).toMatch(/only partly/);
    expect(run.stdout).toMatch(/with 2 of 3 change set\(s\)/);
    expect(run.stdout).toMatch(/Cause: BLOB_MISSING/);
    expect(run.stdout).toMatch(/Next: /);
    expect(run.stdout).toMatch(/fetch \d+\.\d\d s .*reconstruct .*materialize .*verify .*publish \d+\.\d\d s/);
  });

  /** Publishes a captured checkout as the checkpoint of a new work context. */
  function publishAsCheckpoint(checkout: CapturedCheckout): Promise<string> {
    const at = { repository: { identity: repository }, backendKind: "modal", baseImage: "img" };
    const lineage = { ...at, workContextId: uniqueName("wc"), observedHeadId: null };
    return publishCheckpointCapture(catalog().db, agent.scope, lineage, checkout.manifest, checkout.blobs);
  }

  it("restores babel-like checkouts as an agent host does: CR bytes under `* text eol=lf`, id_* directories", async () => {
    for (const name of ["files whose CR bytes", "parser fixtures under id_*"]) {
      const checkout = await CHECKOUT_FIXTURES.find((f) => f.name.startsWith(name))!.make();
      const id = await publishAsCheckpoint(checkout);
      const m = machine();
      const run = await runStrata(
        ["restore", id, "--into", m.into, "--state-dir", m.stateDir, "--agent", agent.name],
        env,
      );
      expect(run.code, run.stdout + run.stderr).toBe(0);
      git(m.into, ["update-index", "-q", "--really-refresh"]);
      expect(git(m.into, ["write-tree"]).trim()).toBe(checkout.manifest.tree);
      expect(git(m.into, ["diff-files", "--name-only"]).trim()).toBe("");
      for (const file of checkout.manifest.verbatim ?? []) {
        expect(readFileSync(join(m.into, file.path))).toEqual(readFileSync(join(checkout.root, file.path)));
      }
    }
  });

  it("names the pushed base when the remote moved away: exit 11, nothing written", async () => {
    const moved = await unpushedOnMovedRemote();
    const id = await publishAsCheckpoint(moved);
    const m = machine();
    const run = await runStrata(
      ["restore", id, "--into", m.into, "--state-dir", m.stateDir, "--agent", agent.name],
      env,
    );
    expect(run.code, run.stdout + run.stderr).toBe(RESTORE_EXIT.UNRESTORED);
    expect(run.stdout).toContain(`Not restored: 1 commit(s) (${moved.base.slice(0, 12)})`);
    expect(run.stdout).toMatch(new RegExp(`Next: .*pushed commit ${moved.base.slice(0, 12)}`));
    expect(run.stdout).not.toMatch(/Next: Push commit/);
  });

  it("acquires and restores the work context's checkpoint in one step", async () => {
    const m = machine();
    const run = await runStrata(
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
    const exported = await runStrata(["export", snapshotId, "-o", file, "--agent", agent.name], env);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/Exported snapshot .*blob\(s\)/);

    const other: TestCatalog = await createTestCatalog(kind === "sqlite" ? "postgres" : "sqlite");
    try {
      const importer = await makeAgent(other.db, "cli-importer");
      const damaged = join(temporaryDirectory("strata-export-"), "damaged.strata");
      const bytes = readFileSync(file);
      bytes[bytes.length - 200] = (bytes[bytes.length - 200] ?? 0) ^ 0x01;
      writeFileSync(damaged, bytes);
      const bad = await runStrata(["import", damaged, "--agent", importer.name], { DATABASE_URL: other.url });
      expect(bad.code).toBe(RESTORE_EXIT.BAD_FILE);
      expect(await other.db.blob.count()).toBe(0);
      expect(await other.db.snapshot.count()).toBe(0);

      const good = await runStrata(["import", file, "--agent", importer.name, "--json"], { DATABASE_URL: other.url });
      expect(good.code, good.stderr).toBe(0);
      expect(JSON.parse(good.stdout)).toMatchObject({ snapshotId, created: true, state: "ready" });
    } finally {
      await other.drop();
    }
  });

  it("restores through a Strata server over HTTP with an agent token", async () => {
    const { url, close } = await serveApp({ db: catalog().db });
    try {
      const m = machine();
      const run = await runStrata(["restore", snapshotId, "--into", m.into, "--state-dir", m.stateDir, "--json"], {
        STRATA_SERVER_URL: url,
        STRATA_TOKEN: agent.token,
      });
      expect(run.code, run.stderr).toBe(0);
      expect((JSON.parse(run.stdout) as { result: RestoreResult }).result.status).toBe("restored");

      const refused = await runStrata(["restore", snapshotId, "--into", machine().into], {
        STRATA_SERVER_URL: url,
        STRATA_TOKEN: "strata_not-a-real-token-at-all-000000000000000000",
      });
      expect(refused.code).toBe(RESTORE_EXIT.UNAVAILABLE);
      expect(refused.stderr).toContain("UNAUTHORIZED");
    } finally {
      await close();
    }
  });
});
