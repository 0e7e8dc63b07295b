// strata hold as a user runs it: real processes against a catalog of each kind. A checkout
// captured with `strata capture --context` is held after its pause checkpoint, for one hour (or
// 14 days with STRATA_PROVIDERS naming its provider idle-persistent); `strata resume` (or `strata
// acquire`) continues in it and ends the hold; releasing it again answers the ended hold. A bad
// STRATA_PROVIDERS stops the command with the configuration's exit code, naming the variable.
import { existsSync, realpathSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runStrata } from "../../server/testing/cli.ts";
import { describeEachDatabase } from "../../server/testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../../server/testing/lineage.ts";
import {
  addOrigin,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../../server/testing/repos.ts";
import { EXIT } from "../output.ts";

afterAll(removeTemporaryDirectories);

const HOUR = 60 * 60 * 1000;

describeEachDatabase("strata hold", (catalog) => {
  let agent: TestAgent;
  let env: Record<string, string>;

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "cli-holder");
    env = { DATABASE_URL: catalog().url, STRATA_DATA_DIR: temporaryDirectory("strata-data-"), STRATA_HOST: "host-a" };
  });

  /** A checkout with an edit, captured as a new work context's checkpoint: the pause. */
  async function paused(backend: string) {
    const root = realpathSync(initRepository({ "a.txt": "a\n", ".id": `${uniqueName("r")}\n` }));
    addOrigin(root);
    write(root, "a.txt", "paused here\n");
    const workContextId = uniqueName("wc");
    const repository = `example.test/acme/${uniqueName("app")}`;
    const key = ["--repository", repository, "--backend", backend];
    const captured = await runStrata(
      ["capture", root, "--context", workContextId, ...key, "--agent", agent.name, "--json"],
      env,
    );
    expect(captured.code, captured.stderr).toBe(0);
    const { snapshotId } = JSON.parse(captured.stdout) as { snapshotId: string };
    return { root, workContextId, snapshotId, repository };
  }

  it("holds a paused checkout; resume continues in it and ends the hold", async () => {
    const task = await paused("local");
    const run = await runStrata(
      [
        "hold",
        task.root,
        "--context",
        task.workContextId,
        "--snapshot",
        task.snapshotId,
        "--agent",
        agent.name,
        "--json",
      ],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const hold = JSON.parse(run.stdout) as { id: string; expiresAt: string; createdAt: string };
    expect(hold).toMatchObject({
      workspace: task.root,
      host: "host-a",
      snapshotId: task.snapshotId,
      provider: "local",
      idlePersistent: false,
      status: "active",
    });
    expect(Date.parse(hold.expiresAt) - Date.parse(hold.createdAt)).toBe(HOUR);

    const resumed = await runStrata(["resume", "--context", task.workContextId, "--agent", agent.name, "--json"], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      checkouts: [{ outcome: "in-place", path: task.root }],
      liveHoldsEnded: [hold.id],
    });

    const released = await runStrata(["hold", "--release", hold.id, "--agent", agent.name, "--json"], env);
    expect(released.code, released.stderr).toBe(0);
    expect(JSON.parse(released.stdout)).toMatchObject({ id: hold.id, status: "ended", endReason: "resumed" });
  });

  it("strata acquire continues in the held checkout on its host, nothing restored", async () => {
    const task = await paused("local");
    const held = await runStrata(
      ["hold", task.root, "--context", task.workContextId, "--snapshot", task.snapshotId, "--agent", agent.name],
      env,
    );
    expect(held.code, held.stderr).toBe(0);
    expect(held.stdout).toContain(`holding ${task.root} on host-a for work context ${task.workContextId}`);
    const into = `${temporaryDirectory("strata-target-")}/checkout`;
    const acquire = (...args: string[]) =>
      runStrata(
        [
          "acquire",
          "--repository",
          task.repository,
          "--backend",
          "local",
          "--base-image",
          "none",
          "--work-context",
          task.workContextId,
          "--into",
          into,
          "--host",
          "host-a",
          "--state-dir",
          `${temporaryDirectory("strata-state-")}`,
          "--agent",
          agent.name,
          ...args,
        ],
        env,
      );
    const run = await acquire("--json");
    expect(run.code, run.stderr).toBe(0);
    const done = JSON.parse(run.stdout) as { path: string; steps: { plan: { rung: string }; reported: string }[] };
    expect(done.path).toBe(task.root);
    expect(done.steps.map((s) => [s.plan.rung, s.reported])).toEqual([["live", "restored"]]);
    expect(existsSync(into)).toBe(false);
    // The hold ended with that resume: the next acquire restores the checkpoint.
    const again = await acquire();
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`checkpoint snapshot ${task.snapshotId}:`);
  });

  it("holds 14 days on a provider STRATA_PROVIDERS names idle-persistent, and stops on a bad value", async () => {
    const task = await paused("fly");
    const args = ["hold", task.root, "--context", task.workContextId, "--snapshot", task.snapshotId];
    const bad = await runStrata([...args, "--agent", agent.name], { ...env, STRATA_PROVIDERS: "fly:sleepy" });
    expect(bad.code).toBe(EXIT.CONFIG);
    expect(bad.stderr).toContain("STRATA_PROVIDERS");

    const run = await runStrata([...args, "--agent", agent.name, "--json"], {
      ...env,
      STRATA_PROVIDERS: "fly:idle-persistent",
    });
    expect(run.code, run.stderr).toBe(0);
    const hold = JSON.parse(run.stdout) as { expiresAt: string; createdAt: string };
    expect(hold).toMatchObject({ provider: "fly", idlePersistent: true });
    expect(Date.parse(hold.expiresAt) - Date.parse(hold.createdAt)).toBe(14 * 24 * HOUR);
  });
});
