// A paused task's live hold on this host, end to end with real git and a catalog of each kind: the
// task works in a pooled worktree, appends its pause checkpoint from there and holds it. While
// the hold lasts, no other task takes, reuses or prunes the worktree; acquire on this host offers
// it (the live rung) and `strata acquire` continues there, the same directory, nothing restored
// (or restores the checkpoint when the worktree no longer is it); acquire on another host gets the
// checkpoint; `strata resume` continues in it and ends the hold. Once the hold expired, acquire
// restores the checkpoint instead and the pool may reuse the worktree. Clocks are explicit.
import { existsSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { acquireWorkspace } from "../acquire/acquire-workspace.ts";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { holdWorkspace } from "../lineage/hold-workspace.ts";
import { releaseLiveHold } from "../lineage/release-live-hold.ts";
import { planResume } from "../restore/plan-resume.ts";
import { reportRestore } from "../restore/report-restore.ts";
import { acquireAndRestore, localRestorePort, restoreSnapshot } from "../restore/restore-snapshot.ts";
import { captureInto } from "../testing/checkouts.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import {
  addOrigin,
  expectUntouched,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";
import { publishCheckpointCapture } from "../testing/restore.ts";
import { recordCapturedSnapshot } from "./capture-pooled.ts";
import { holdWorktree } from "./hold-worktree.ts";
import { listPool } from "./list-pool.ts";
import { openWorktreePool, type WorktreePool } from "./pool.ts";
import { prunePool } from "./prune-pool.ts";
import { resumeCheckouts, resumedLiveHolds, type ResumeResult } from "./resume-checkouts.ts";
import { isReusable } from "./reuse-worktree.ts";
import { releaseWorktree, takeWorktree, type HeldWorktree } from "./take-worktree.ts";
import { continuesLive } from "./continue-live.ts";

afterAll(removeTemporaryDirectories);

const HOST = "host-a";
const COORDINATES = { repository: { identity: "example.test/acme/held" }, backendKind: "local", baseImage: "none" };

describeEachDatabase("live holds on this host", (catalog) => {
  let agent: TestAgent;
  let pool: WorktreePool;
  let machine: string;
  const taken: HeldWorktree[] = [];
  const port = () => localRestorePort(catalog().db, agent.scope);

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "pauser");
    machine = temporaryDirectory("strata-host-");
    pool = await openWorktreePool({ dir: join(machine, "worktrees"), host: HOST });
  });
  afterEach(async () => {
    for (const held of taken.splice(0)) await releaseWorktree(held);
  });

  async function publish(
    manifest: CaptureManifest,
    blobs: Map<string, Buffer>,
    at: { workContextId: string; observedHeadId: string | null; workspace: string; host: string },
  ): Promise<string> {
    const { workContextId, observedHeadId } = at;
    const id = await publishCheckpointCapture(
      catalog().db,
      agent.scope,
      { ...COORDINATES, workContextId, observedHeadId },
      manifest,
      blobs,
    );
    await catalog().db.snapshot.update({ where: { id }, data: { sourceWorkspace: at.workspace, sourceHost: at.host } });
    return id;
  }

  async function resume(
    workContextId: string,
  ): Promise<{ plan: Awaited<ReturnType<typeof planResume>>; result: ResumeResult }> {
    const plan = await planResume(catalog().db, { workContextId, agent: agent.scope });
    const result = await resumeCheckouts({
      plan,
      port: port(),
      pool,
      unpooledDir: join(machine, "restored"),
      stateDir: join(machine, "state"),
      hostNames: [HOST],
      owner: workContextId,
    });
    taken.push(...result.held);
    return { plan, result };
  }

  /**
   * A task recorded on another host, resumed here into a pooled worktree, then paused: an edit
   * captured from the worktree as its next checkpoint, and the worktree held for `durationMs` on
   * the pool's clock (the catalog's hold at `now`).
   */
  async function pausedInPool(opts: { now: Date; durationMs?: number }) {
    const root = realpathSync(initRepository({ "a.txt": "a\n", ".id": `${uniqueName("r")}\n` }));
    addOrigin(root);
    write(root, "a.txt", `started by ${uniqueName("task")}\n`);
    const workContextId = uniqueName("wc");
    let blobs = new Map<string, Buffer>();
    const started = await publish(await captureInto(root, blobs), blobs, {
      workContextId,
      observedHeadId: null,
      workspace: root,
      host: "another-host",
    });
    const [restored] = (await resume(workContextId)).result.checkouts;
    expect(restored).toMatchObject({ outcome: "restored", worktree: { origin: "new" } });
    for (const held of taken.splice(0)) await releaseWorktree(held);
    const worktree = restored!.path!;
    const name = restored!.worktree!.name;

    // The task's work until the pause, captured from its worktree as `strata capture` does.
    write(worktree, "a.txt", "paused in the middle of the work\n");
    write(worktree, "notes.md", "where I stopped\n");
    blobs = new Map();
    const manifest = await captureInto(worktree, blobs);
    const checkpointId = await publish(manifest, blobs, {
      workContextId,
      observedHeadId: started,
      workspace: worktree,
      host: HOST,
    });
    expect(await recordCapturedSnapshot({ pool, name, owner: workContextId }, { id: checkpointId, manifest })).toBe(
      "recorded",
    );

    // The pause: the checkpoint first, then the hold, in the catalog and in the pool.
    const hold = await holdWorkspace(catalog().db, {
      agent: agent.scope,
      workContextId,
      snapshotId: checkpointId,
      workspace: worktree,
      host: HOST,
      providers: {},
      now: opts.now,
    });
    const durationMs = opts.durationMs ?? hold.expiresAt.getTime() - opts.now.getTime();
    expect(await holdWorktree(pool, name, { owner: workContextId, durationMs })).toBe("held");
    const repository = (await listPool(pool)).worktrees.find((w) => w.name === name)!.repository;
    return { workContextId, checkpointId, manifest, worktree, name, repository, hold };
  }

  const acquireOn = (workContextId: string, host: string, now: Date, workspace: string) =>
    acquireWorkspace(catalog().db, {
      agent: agent.scope,
      ...COORDINATES,
      canonicalRef: "main",
      workContextId,
      workspace,
      host,
      now,
    });

  it("keeps the held worktree from other tasks and pruning; resume continues in it and ends the hold", async () => {
    const now = new Date();
    const paused = await pausedInPool({ now });
    const described = (await listPool(pool)).worktrees.find((w) => w.name === paused.name);
    expect(described).toMatchObject({ state: "held", owner: paused.workContextId });
    expect(described?.keptUntil).not.toBeNull();

    // Another task of the repository neither reuses it (clean as it is) nor gets it pruned.
    const other = await takeWorktree(pool, paused.repository, { owner: "another-task", reuse: isReusable });
    taken.push(other);
    expect(other.name).not.toBe(paused.name);
    expect((await prunePool(pool)).kept).toContainEqual(expect.objectContaining({ name: paused.name, reason: "held" }));

    // The task resumes here: its held worktree, as it is.
    const untouched = expectUntouched(paused.worktree);
    const { plan, result } = await resume(paused.workContextId);
    expect(plan.checkouts[0]?.live).toMatchObject({ holdId: paused.hold.id, workspace: paused.worktree, host: HOST });
    expect(result.checkouts).toEqual([
      expect.objectContaining({
        snapshotId: paused.checkpointId,
        outcome: "in-place",
        path: paused.worktree,
        worktree: { name: paused.name, origin: "retaken" },
        result: null,
      }),
    ]);
    untouched();
    expect(resumedLiveHolds(plan, result, [HOST])).toEqual([paused.hold.id]);
    expect(resumedLiveHolds(plan, result, ["elsewhere"])).toEqual([]);
    const ended = await releaseLiveHold(catalog().db, {
      agent: agent.scope,
      holdId: paused.hold.id,
      reason: "resumed",
    });
    expect(ended).toMatchObject({ status: "ended", endReason: "resumed" });
  });

  /** What `strata acquire` runs: acquire, then continue in the held workspace or restore. */
  const acquireAndContinue = (workContextId: string, into: string) =>
    acquireAndRestore(port(), {
      acquire: { ...COORDINATES, canonicalRef: "main", workContextId },
      into,
      host: HOST,
      stateDir: join(machine, "state"),
      continueLive: (plan) => continuesLive(port(), plan),
    });

  it("acquire offers the held worktree on its host, nothing restored; another host gets the checkpoint", async () => {
    const now = new Date();
    const paused = await pausedInPool({ now });
    const target = join(temporaryDirectory("strata-target-"), "checkout");

    const elsewhere = await acquireOn(paused.workContextId, "another-host", now, "/elsewhere/checkout");
    expect(elsewhere).toMatchObject({ rung: "checkpoint", live: null, snapshot: { id: paused.checkpointId } });

    const untouched = expectUntouched(paused.worktree);
    const done = await acquireAndContinue(paused.workContextId, target);
    expect(done.path).toBe(paused.worktree);
    expect(done.steps).toEqual([
      expect.objectContaining({
        plan: expect.objectContaining({
          rung: "live",
          snapshot: expect.objectContaining({ id: paused.checkpointId }),
          live: expect.objectContaining({ holdId: paused.hold.id, workspace: paused.worktree, host: HOST }),
        }),
        result: null,
        reported: "restored",
      }),
    ]);
    untouched();
    expect(existsSync(target)).toBe(false);
    const restore = await catalog().db.restore.findUniqueOrThrow({ where: { id: done.steps[0]!.plan.restoreId } });
    expect(restore).toMatchObject({ rung: "checkpoint", snapshotId: paused.checkpointId, outcome: "restored" });
    const hold = await catalog().db.liveHold.findUniqueOrThrow({ where: { id: paused.hold.id } });
    expect(hold.endReason).toBe("resumed");
  });

  it("restores the checkpoint when the held worktree no longer is it", async () => {
    const paused = await pausedInPool({ now: new Date() });
    write(paused.worktree, "a.txt", "changed after the pause by something else\n");
    const target = join(temporaryDirectory("strata-target-"), "checkout");
    const done = await acquireAndContinue(paused.workContextId, target);
    expect(done.path).toBe(target);
    expect(done.steps).toEqual([
      expect.objectContaining({
        plan: expect.objectContaining({ rung: "live" }),
        result: expect.objectContaining({
          status: "restored",
          holds: expect.objectContaining({ tree: paused.manifest.tree }),
        }),
        reported: "restored",
      }),
    ]);
  });

  it("restores the checkpoint once the hold expired, and the pool may reuse the worktree then", async () => {
    const now = new Date();
    // Expired on the pool's clock at once, and acquired after the catalog's expiry.
    const paused = await pausedInPool({ now, durationMs: 0 });
    const late = new Date(paused.hold.expiresAt.getTime() + 1000);
    const target = join(temporaryDirectory("strata-target-"), "checkout");
    const plan = await acquireOn(paused.workContextId, HOST, late, target);
    expect(plan).toMatchObject({ rung: "checkpoint", live: null, snapshot: { id: paused.checkpointId } });
    const report = await restoreSnapshot(port(), {
      snapshotId: plan.snapshot!.id,
      into: target,
      stateDir: join(machine, "state"),
    });
    expect(report.result).toMatchObject({ status: "restored", holds: { tree: paused.manifest.tree } });
    await reportRestore(catalog().db, {
      agent: agent.scope,
      restoreId: plan.restoreId,
      outcome: "restored",
      now: late,
    });

    // Nothing keeps the worktree any more: another task reuses it, clean at the checkpoint.
    const other = await takeWorktree(pool, paused.repository, { owner: uniqueName("another-task"), reuse: isReusable });
    taken.push(other);
    expect({ name: other.name, origin: other.origin }).toEqual({ name: paused.name, origin: "reused" });
  });
});
