// Resuming a task's checkouts with real git, the plan read from a catalog of each kind: a
// checkout whose recorded edits were committed continues in place and nothing is written; one
// that drifted, or that another host recorded, is restored into the pool and verified; the
// task's own pooled worktree is continued in on its next resume; another task's resume reuses
// it once idle, resetting it to its own snapshot. The user's checkout is byte-identical (files,
// index, HEAD, refs) and `git status` says the same after every resume.
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { planResume } from "../restore/plan-resume.ts";
import { localRestorePort } from "../restore/restore-snapshot.ts";
import { captureInto } from "../testing/checkouts.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import {
  addOrigin,
  commitAll,
  git,
  expectUntouched,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";
import { publishCheckpointCapture } from "../testing/restore.ts";
import { listPool } from "./list-pool.ts";
import { openWorktreePool, type WorktreePool } from "./pool.ts";
import { resumeCheckouts, type ResumeResult } from "./resume-checkouts.ts";
import { releaseWorktree } from "./take-worktree.ts";
import { checkWorktree } from "./verify-worktree.ts";

afterAll(removeTemporaryDirectories);

const HOST = "host-a";

describeEachDatabase("resume a task's checkouts", (catalog) => {
  let agent: TestAgent;
  let pool: WorktreePool;
  let machine: string;
  const results: ResumeResult[] = [];
  const port = () => localRestorePort(catalog().db, agent.scope);

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "resumer");
  });
  afterEach(async () => {
    for (const result of results.splice(0)) for (const held of result.held) await releaseWorktree(held);
  });

  /** A user's checkout with a remote and recorded edits, published as a work context's checkpoint. */
  async function recordedCheckout(host = HOST, cloneOf?: string) {
    let root: string;
    let remote: string;
    if (cloneOf) {
      root = realpathSync(temporaryDirectory());
      remote = cloneOf;
      git(root, ["clone", "--quiet", `file://${cloneOf}`, "."]);
    } else {
      const files = { "a.txt": "a\n", "b.txt": "b\n", ".gitignore": "node_modules/\n", ".id": `${uniqueName("r")}\n` };
      root = realpathSync(initRepository(files));
      remote = addOrigin(root);
    }
    write(root, "a.txt", `a, edited by ${uniqueName("task")}\n`);
    write(root, "new.txt", "new\n");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    const workContextId = uniqueName("wc");
    const snapshotId = await publish(manifest, blobs, workContextId, { workspace: root, host });
    return { root, remote, manifest, blobs, workContextId, snapshotId };
  }

  async function publish(
    manifest: CaptureManifest,
    blobs: Map<string, Buffer>,
    workContextId: string,
    source: { workspace: string; host: string },
  ): Promise<string> {
    const id = await publishCheckpointCapture(
      catalog().db,
      agent.scope,
      {
        repository: { identity: "example.test/acme/app" },
        backendKind: "local",
        baseImage: "none",
        workContextId,
        observedHeadId: null,
      },
      manifest,
      blobs,
    );
    await catalog().db.snapshot.update({
      where: { id },
      data: { sourceWorkspace: source.workspace, sourceHost: source.host },
    });
    return id;
  }

  async function resume(workContextId: string): Promise<ResumeResult> {
    machine ??= temporaryDirectory("strata-host-");
    pool ??= await openWorktreePool({ dir: join(machine, "worktrees"), host: HOST });
    const result = await resumeCheckouts({
      plan: await planResume(catalog().db, { workContextId, agent: agent.scope }),
      port: port(),
      pool,
      unpooledDir: join(machine, "restored"),
      stateDir: join(machine, "state"),
      hostNames: [HOST],
      owner: workContextId,
    });
    results.push(result);
    return result;
  }

  it("continues in place after the recorded edits were committed, writing nothing", async () => {
    const { root, workContextId, snapshotId } = await recordedCheckout();
    commitAll(root, "the recorded edits");
    const untouched = expectUntouched(root);
    const result = await resume(workContextId);
    expect(result.checkouts).toEqual([
      expect.objectContaining({
        snapshotId,
        outcome: "in-place",
        path: root,
        reason: "HEAD moved forward over the recorded files",
        worktree: null,
        result: null,
      }),
    ]);
    untouched();
    expect((await listPool(pool)).worktrees).toEqual([]);
  });

  it("restores a drifted checkout into the pool, verified, and never writes the user's checkout", async () => {
    const { root, manifest, workContextId, snapshotId } = await recordedCheckout();
    write(root, "b.txt", "b, changed after the snapshot\n");
    const untouched = expectUntouched(root);
    const [resumed] = (await resume(workContextId)).checkouts;
    expect(resumed).toMatchObject({
      outcome: "restored",
      reason: expect.stringContaining(`${root} drifted: 1 path(s) differ`),
      worktree: { origin: "new" },
      result: { status: "restored" },
    });
    expect(resumed?.path?.startsWith(pool.dir)).toBe(true);
    expect(await checkWorktree({ snapshotId, manifest }, resumed!.path!)).toMatchObject({ matches: true });
    untouched();
  });

  it("continues in the task's own pooled worktree, and another task's resume reuses it once idle", async () => {
    // Recorded on another host: restored here, into a new pooled worktree.
    const first = await recordedCheckout("another-host");
    const [restored] = (await resume(first.workContextId)).checkouts;
    expect(restored).toMatchObject({
      outcome: "restored",
      reason: "recorded on another-host",
      worktree: { origin: "new" },
    });
    for (const result of results.splice(0)) for (const held of result.held) await releaseWorktree(held);
    write(restored!.path!, "node_modules/dep/index.js", "installed\n");

    // The same task again: its own worktree, still its snapshot, continued in place.
    const [again] = (await resume(first.workContextId)).checkouts;
    expect(again).toMatchObject({
      outcome: "in-place",
      path: restored!.path,
      reason: "its own pooled worktree matches its snapshot",
      worktree: { name: restored!.worktree!.name, origin: "retaken" },
    });
    for (const result of results.splice(0)) for (const held of result.held) await releaseWorktree(held);

    // Another task of the same repository: the idle clean worktree is reset to its snapshot.
    const second = await recordedCheckout("another-host", first.remote);
    const [reused] = (await resume(second.workContextId)).checkouts;
    expect(reused).toMatchObject({
      outcome: "restored",
      path: restored!.path,
      worktree: { name: restored!.worktree!.name, origin: "reused" },
      result: { status: "restored", holds: { tree: second.manifest.tree } },
    });
    const verified = await checkWorktree({ snapshotId: second.snapshotId, manifest: second.manifest }, reused!.path!);
    expect(verified.matches).toBe(true);
    expect(git(reused!.path!, ["ls-files", "--others", "--ignored", "--exclude-standard"])).toBe(
      "node_modules/dep/index.js\n",
    );
  });

  it("plans one snapshot by id, and says when a work context has nothing to resume", async () => {
    const { root, snapshotId, workContextId } = await recordedCheckout();
    expect(await planResume(catalog().db, { snapshotId, agent: agent.scope })).toMatchObject({
      workContextId,
      checkouts: [{ snapshot: { id: snapshotId }, recorded: { workspace: root, host: HOST } }],
    });
    await expect(
      planResume(catalog().db, { workContextId: uniqueName("none"), agent: agent.scope }),
    ).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });
});
