// strata verify as a user runs it: a real process against a catalog of each kind, a checkout
// restored from it, real exit codes and output.
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../../server/testing/databases.ts";
import { CHECKOUT_FIXTURES, type CapturedCheckout } from "../../server/testing/checkouts.ts";
import { remove, removeTemporaryDirectories, temporaryDirectory, write } from "../../server/testing/repos.ts";
import { makeAgent, uniqueName, type TestAgent } from "../../server/testing/lineage.ts";
import { publishCheckpointCapture } from "../../server/testing/restore.ts";
import { runStrata } from "../../server/testing/cli.ts";
import { serveApp } from "../../server/testing/http-server.ts";
import type { WorktreeVerification } from "../../server/worktrees/worktree-verification.ts";
import { RESTORE_EXIT } from "./restore.ts";
import { VERIFY_EXIT } from "./verify.ts";

afterAll(removeTemporaryDirectories);

describeEachDatabase("strata verify", (catalog) => {
  let agent: TestAgent;
  let env: Record<string, string>;
  let captured: CapturedCheckout;
  let snapshotId: string;
  let into: string;

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "cli-verifier");
    env = { DATABASE_URL: catalog().url };
    captured = await CHECKOUT_FIXTURES[1]!.make();
    snapshotId = await publishCheckpointCapture(
      catalog().db,
      agent.scope,
      {
        repository: { identity: `example.test/acme/${uniqueName("cli")}` },
        backendKind: "modal",
        baseImage: "img",
        workContextId: uniqueName("wc"),
        observedHeadId: null,
      },
      captured.manifest,
      captured.blobs,
    );
    const machine = temporaryDirectory("strata-machine-");
    into = join(machine, "restored");
    const restored = await runStrata(
      ["restore", snapshotId, "--into", into, "--state-dir", join(machine, "state"), "--agent", agent.name],
      env,
    );
    expect(restored.code, restored.stderr).toBe(0);
  }, 120_000);

  it("exits 0 when the checkout matches, with the typed answer as --json", async () => {
    const run = await runStrata(["verify", into, "--snapshot", snapshotId, "--agent", agent.name, "--json"], env);
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout) as WorktreeVerification;
    expect(answer).toMatchObject({
      snapshotId,
      root: into,
      matches: true,
      headMoved: false,
      tree: captured.manifest.tree,
      head: { recorded: captured.manifest.head, current: captured.manifest.head },
      drift: { total: 0, paths: [] },
    });

    const human = await runStrata(["verify", into, "--snapshot", snapshotId, "--agent", agent.name], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^${into} matches snapshot ${snapshotId} \\(HEAD [0-9a-f]{12}, tree`));
  });

  it("reads the snapshot from a Strata server with STRATA_TOKEN", async () => {
    const { url, close } = await serveApp({ db: catalog().db });
    try {
      const run = await runStrata(["verify", into, "--snapshot", snapshotId, "--json"], {
        STRATA_SERVER_URL: url,
        STRATA_TOKEN: agent.token,
      });
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ snapshotId, matches: true });
    } finally {
      await close();
    }
  });

  // Last: it changes the restored checkout.
  it("exits with the drift code, one line per drifted path, and refuses an unknown snapshot", async () => {
    write(into, "a.txt", "changed after the restore\n");
    write(into, "stray.txt", "not recorded\n");
    remove(into, "b.txt");
    const run = await runStrata(["verify", into, "--snapshot", snapshotId, "--agent", agent.name], env);
    expect(run.code, run.stderr).toBe(VERIFY_EXIT.DRIFT);
    expect(run.stdout.split("\n")).toEqual([
      `${into} drifted from snapshot ${snapshotId}: 3 path(s) differ from the recorded tree (1 added, 1 modified, 1 deleted).`,
      "  modified a.txt",
      "  deleted  b.txt",
      "  added    stray.txt",
      "",
    ]);

    const json = await runStrata(["verify", into, "--snapshot", snapshotId, "--agent", agent.name, "--json"], env);
    expect(json.code).toBe(VERIFY_EXIT.DRIFT);
    expect(JSON.parse(json.stdout)).toMatchObject({
      matches: false,
      drift: { added: 1, modified: 1, deleted: 1, total: 3 },
    });

    const missing = await runStrata(
      ["verify", into, "--snapshot", "0d3c1a52-8d0e-4a4e-9a56-3f1e8b2c9d71", "--agent", agent.name, "--json"],
      env,
    );
    expect(missing.code).toBe(RESTORE_EXIT.NOT_FOUND);
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: { code: "NOT_FOUND" } });
  });
});
