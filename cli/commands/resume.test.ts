// strata resume as a user runs it: real processes against a catalog of each kind, a checkout
// captured with `strata capture` (which records its directory and host), and this host's pool
// under STRATA_DATA_DIR. After a commit of the recorded edits the checkout continues in place and
// nothing is written; once it drifted, the snapshot is restored into the pool (over HTTP too); the
// user's checkout is byte-identical (files, index, HEAD, refs) and `git status` unchanged.
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runStrata } from "../../server/testing/cli.ts";
import { describeEachDatabase } from "../../server/testing/databases.ts";
import { serveApp } from "../../server/testing/http-server.ts";
import { makeAgent, uniqueName, type TestAgent } from "../../server/testing/lineage.ts";
import {
  addOrigin,
  commitAll,
  git,
  imageOf,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../../server/testing/repos.ts";
import type { ResumedCheckout } from "../../server/worktrees/resume-checkouts.ts";
import { RESTORE_EXIT } from "./restore.ts";

afterAll(removeTemporaryDirectories);

describeEachDatabase("strata resume", (catalog) => {
  let agent: TestAgent;
  let env: Record<string, string>;
  let root: string;
  let workContextId: string;
  let snapshotId: string;

  const untouched = () => {
    const status = () => git(root, ["status", "--porcelain=v2", "--branch", "--untracked-files=all"]);
    const before = { image: imageOf(root), status: status() };
    return () => expect({ image: imageOf(root), status: status() }).toEqual(before);
  };
  const resume = (...args: string[]) =>
    runStrata(["resume", "--context", workContextId, "--agent", agent.name, ...args], env);

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "cli-resumer");
    const dataDir = temporaryDirectory("strata-data-");
    env = { DATABASE_URL: catalog().url, STRATA_DATA_DIR: dataDir };
    root = realpathSync(initRepository({ "a.txt": "a\n", "b.txt": "b\n", ".gitignore": "node_modules/\n" }));
    addOrigin(root);
    write(root, "a.txt", "a, edited\n");
    write(root, "new.txt", "new\n");
    workContextId = uniqueName("wc");
    const captured = await runStrata(
      ["capture", root, "--context", workContextId, "--agent", agent.name, "--json"],
      env,
    );
    expect(captured.code, captured.stderr).toBe(0);
    snapshotId = (JSON.parse(captured.stdout) as { snapshotId: string }).snapshotId;
  }, 120_000);

  it("continues in place after a commit of the recorded edits, writing nothing", async () => {
    commitAll(root, "the recorded edits");
    const check = untouched();
    const run = await resume("--json");
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      workContextId,
      checkouts: [
        expect.objectContaining({
          snapshotId,
          outcome: "in-place",
          path: root,
          reason: "HEAD moved forward over the recorded files",
        }),
      ],
      liveHoldsEnded: [],
    });
    const human = await resume();
    expect(human.stdout).toBe(`continues in place: ${root} (HEAD moved forward over the recorded files)\n`);
    check();
  });

  it("restores a drifted checkout into the pool, one line per checkout, also through a server", async () => {
    write(root, "b.txt", "b, changed after the snapshot\n");
    const check = untouched();
    const run = await resume("--json");
    expect(run.code, run.stderr).toBe(0);
    const [restored] = (JSON.parse(run.stdout) as { checkouts: ResumedCheckout[] }).checkouts;
    expect(restored).toMatchObject({
      outcome: "restored",
      // HEAD moved too: the first test committed the recorded edits.
      reason: expect.stringMatching(
        /drifted: HEAD moved .*; 1 path\(s\) differ from the recorded tree \(1 modified\)$/,
      ),
      worktree: { origin: "new" },
      result: { status: "restored" },
    });
    expect(restored?.path?.startsWith(join(env.STRATA_DATA_DIR!, "worktrees"))).toBe(true);
    // It borrows the objects of this host's store of the repository.
    expect(restored?.result?.objectStore?.startsWith(join(env.STRATA_DATA_DIR!, "objects"))).toBe(true);
    const verify = await runStrata(["verify", restored!.path!, "--snapshot", snapshotId, "--agent", agent.name], env);
    expect(verify.code, verify.stdout).toBe(0);

    // Again, over HTTP: the task's own pooled worktree, still its snapshot, continues in place.
    const { url, close } = await serveApp({ db: catalog().db });
    try {
      const remote = await runStrata(["resume", "--context", workContextId], {
        STRATA_DATA_DIR: env.STRATA_DATA_DIR!,
        STRATA_SERVER_URL: url,
        STRATA_TOKEN: agent.token,
      });
      expect(remote.code, remote.stderr).toBe(0);
      expect(remote.stdout).toBe(
        `continues in place: ${restored!.path} (its own pooled worktree matches its snapshot)\n`,
      );
    } finally {
      await close();
    }
    check();
  });

  it("refuses an unknown work context and a missing choice", async () => {
    workContextId = uniqueName("unknown");
    const run = await resume("--json");
    expect(run.code).toBe(RESTORE_EXIT.NOT_FOUND);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: "NOT_FOUND" } });
    expect((await runStrata(["resume", "--agent", agent.name], env)).code).toBe(2);
  });
});
