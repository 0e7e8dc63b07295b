// Real worker processes (`node cli/strata.mjs worker --host X`), real git, real databases:
// a worker killed with SIGKILL in the middle of a capture or a restore leaves nothing
// half-written in sight and a second worker finishes the job; three hosts on one PostgreSQL
// catalog run 200 mixed jobs with nothing lost and nothing done twice.
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestCatalog, describeEachDatabase, type TestCatalog } from "../testing/databases.ts";
import type { JobView } from "../domain/jobs.ts";
import {
  addOrigin,
  dirtyRepository,
  expectUntouched,
  git,
  removeTemporaryDirectories,
  temporaryDirectory,
} from "../testing/repos.ts";
import { objectStoresDirectory } from "../restore/engine/host-object-store.ts";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import { enqueueCapture, enqueueRestore } from "./agent-jobs.ts";
import { consistencyViolations } from "../testing/content.ts";
import { freshLineageKey, makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { JobQueue } from "./queue.ts";
import { killHard, killWorkers, startWorker, stopGently, waitFor } from "../testing/worker-processes.ts";
import { testHostRoots, type TestHostRoots } from "../testing/host-roots.ts";

const LEASE_SECONDS = 2;
// The enqueuing side (this process) decides each job's lease.
process.env.STRATA_JOB_LEASE_SECONDS = String(LEASE_SECONDS);

afterAll(removeTemporaryDirectories);
afterAll(killWorkers);

describeEachDatabase("worker processes killed with SIGKILL", (catalog) => {
  let agent: TestAgent;
  let queue: JobQueue;
  let dataDir: string;
  let roots: TestHostRoots;

  beforeAll(async () => {
    queue = new JobQueue(catalog().db);
    agent = await makeAgent(catalog().db, "worker");
    dataDir = temporaryDirectory("strata-worker-data-");
    roots = testHostRoots();
  });

  async function job(id: string): Promise<JobView> {
    return (await queue.get(catalog().db, id))!;
  }

  for (const point of ["capture:publish", "capture:layers"]) {
    it(`finishes a capture whose worker died at ${point}, with one checkpoint and nothing half-written`, async () => {
      const db = catalog().db;
      const repo = roots.give(agent.name, dirtyRepository("capture"));
      const key = freshLineageKey("capture");
      const host = uniqueName("cap");
      const enqueued = await enqueueCapture(db, { host, dir: repo, key, agent: agent.scope });

      const first = startWorker(catalog().url, host, dataDir, { ...roots.env, STRATA_TEST_PAUSE_AT: point });
      await waitFor(`the first worker to pause at ${point}`, async () => first.stderr().includes(`paused at ${point}`));
      expect(await job(enqueued.id)).toMatchObject({ state: "active", attempts: 1 });
      await killHard(first);

      const lineageSnapshots = () =>
        db.snapshot.findMany({
          where: { workContextId: key.workContextId },
          select: { id: true, state: true, class: true },
        });
      if (point === "capture:publish") {
        // Blobs may be stored (unreferenced, inside their grace window); no snapshot exists.
        expect(await lineageSnapshots()).toEqual([]);
      }

      const second = startWorker(catalog().url, host, dataDir, roots.env);
      const done = await waitFor("the job to complete", async () => {
        const j = await job(enqueued.id);
        return j.state === "completed" ? j : null;
      });
      await stopGently(second);

      expect(done.attempts).toBe(2);
      const result = done.result as { snapshotId: string; outcome: string; recovered?: boolean };
      expect(result.outcome).toBe("appended");
      expect(Boolean(result.recovered)).toBe(point === "capture:layers");
      const snapshots = await lineageSnapshots();
      expect(snapshots).toEqual([{ id: result.snapshotId, state: "ready", class: "checkpoint" }]);
      expect(await db.snapshotHead.count({ where: { snapshotId: result.snapshotId } })).toBeGreaterThan(0);
      expect(await consistencyViolations(db)).toEqual([]);
      // The worker's log line of the attempt names the job and its outcome (whatever the log's format).
      expect(second.stderr()).toMatch(new RegExp(`${enqueued.id}[^\\n]*completed`));
    }, 90_000);
  }

  /**
   * A checkout with an origin captured as a checkpoint, and a restore job of its work context
   * enqueued for a new host into `workspace(checkout)`.
   */
  async function publishedRestore(label: string, workspace: (checkout: string) => string) {
    const db = catalog().db;
    const repo = roots.give(agent.name, dirtyRepository(label));
    addOrigin(repo);
    const key = freshLineageKey(label);
    const published = await captureAndPublish(localCatalog(db, agent.scope), {
      dir: repo,
      target: { kind: "checkpoint", key },
    });
    const host = uniqueName(label.slice(0, 3));
    const { plan, job: enqueued } = await enqueueRestore(db, {
      repository: key.repository,
      backendKind: key.backendKind,
      baseImage: key.baseImage,
      canonicalRef: "refs/heads/main",
      workContextId: key.workContextId,
      workspace: workspace(repo),
      host,
      agent: agent.scope,
    });
    expect(plan.snapshot?.id).toBe(published.snapshotId);
    return { repo, key, published, host, plan, enqueued };
  }

  for (const point of ["restore:verify", "restore:placed"]) {
    it(`finishes a restore whose worker died at ${point}; the target only ever appears whole`, async () => {
      const db = catalog().db;
      const parent = join(roots.root, uniqueName("parent"));
      mkdirSync(parent);
      const into = join(parent, "workspace");
      const { key, published, host, plan, enqueued } = await publishedRestore("restore", () => into);

      const first = startWorker(catalog().url, host, dataDir, { ...roots.env, STRATA_TEST_PAUSE_AT: point });
      await waitFor(`the first worker to pause at ${point}`, async () => first.stderr().includes(`paused at ${point}`));
      await killHard(first);
      if (point === "restore:verify") expect(existsSync(into)).toBe(false);

      const second = startWorker(catalog().url, host, dataDir, roots.env);
      const done = await waitFor("the job to complete", async () => {
        const j = await job(enqueued!.id);
        return j.state === "completed" ? j : null;
      });
      await stopGently(second);

      expect(done.attempts).toBe(2);
      expect(done.result).toMatchObject({ restoreId: plan.restoreId, outcome: "restored", path: into });
      // The worktree is the captured state, to the tree id; nothing else is left next to it.
      expect(git(into, ["write-tree"]).trim()).toBe(published.manifest.tree);
      expect(readdirSync(parent)).toEqual(["workspace"]);
      // The repository's objects are borrowed from this host's store under the data directory.
      const alternates = readFileSync(join(into, ".git", "objects", "info", "alternates"), "utf8");
      expect(alternates).toContain(objectStoresDirectory(dataDir));
      const restores = await db.restore.findMany({
        where: { workContextId: key.workContextId },
        select: { id: true, outcome: true, pinId: true, snapshotId: true },
      });
      expect(restores).toHaveLength(1);
      expect(restores[0]).toMatchObject({ id: plan.restoreId, outcome: "restored" });
      const pin = await db.pin.findFirst({ where: { pinId: restores[0]!.pinId! } });
      expect(pin?.releasedAt).not.toBeNull();
    }, 90_000);
  }

  it("continues in place when the target already is the snapshot's checkout, writing nothing", async () => {
    const db = catalog().db;
    const { repo, host, plan, enqueued } = await publishedRestore("in-place", (checkout) => checkout);
    const untouched = expectUntouched(repo);

    const worker = startWorker(catalog().url, host, dataDir, roots.env);
    const done = await waitFor("the job to complete", async () => {
      const j = await job(enqueued!.id);
      return j.state === "completed" || j.state === "failed" ? j : null;
    });
    await stopGently(worker);

    expect(done.state).toBe("completed");
    expect(done.result).toMatchObject({ restoreId: plan.restoreId, outcome: "restored", path: repo, inPlace: true });
    untouched();
    const restore = await db.restore.findUniqueOrThrow({ where: { id: plan.restoreId } });
    expect(restore.outcome).toBe("restored");
  }, 60_000);
});

describe("three worker hosts on one PostgreSQL catalog", () => {
  let catalog: TestCatalog;
  beforeAll(async () => {
    catalog = await createTestCatalog("postgres");
  }, 60_000);
  afterAll(async () => {
    await catalog.drop();
  });

  it("runs 200 mixed capture and restore jobs with nothing lost and nothing done twice", async () => {
    const db = catalog.db;
    const agent = await makeAgent(db, "fleet");
    const hosts = ["alpha", "beta", "gamma"].map((name) => ({
      name: uniqueName(name),
      dir: temporaryDirectory(`strata-host-${name}-`),
      roots: testHostRoots(),
    }));
    const CAPTURES_PER_HOST = 46; // 138 captures
    const RESTORES = [21, 21, 20]; // 62 restores
    const captureJobs: { id: string; host: string; workContextId: string }[] = [];
    const restoreJobs: { id: string; host: string; into: string; restoreId: string; tree: string }[] = [];

    for (const [n, host] of hosts.entries()) {
      const repo = host.roots.give(agent.name, dirtyRepository(host.name));
      // One checkpoint to restore from, published before the workers start.
      const sourceKey = freshLineageKey(`source-${n}`);
      const source = await captureAndPublish(localCatalog(db, agent.scope), {
        dir: repo,
        target: { kind: "checkpoint", key: sourceKey },
      });
      for (let i = 0; i < CAPTURES_PER_HOST; i += 1) {
        const key = { ...sourceKey, workContextId: uniqueName(`cap-${n}-${i}`) };
        const job = await enqueueCapture(db, { host: host.name, dir: repo, key, agent: agent.scope });
        captureJobs.push({ id: job.id, host: host.name, workContextId: key.workContextId });
      }
      mkdirSync(join(host.roots.root, "workspaces"));
      for (let i = 0; i < RESTORES[n]!; i += 1) {
        const into = join(host.roots.root, "workspaces", `w${i}`);
        const { plan, job } = await enqueueRestore(db, {
          repository: sourceKey.repository,
          backendKind: sourceKey.backendKind,
          baseImage: sourceKey.baseImage,
          canonicalRef: "refs/heads/main",
          workContextId: sourceKey.workContextId,
          workspace: into,
          host: host.name,
          agent: agent.scope,
        });
        restoreJobs.push({ id: job!.id, host: host.name, into, restoreId: plan.restoreId, tree: source.manifest.tree });
      }
    }
    expect(captureJobs.length + restoreJobs.length).toBe(200);

    const started = hosts.map((h) => startWorker(catalog.url, h.name, join(h.dir, "data"), h.roots.env));
    const finished = await waitFor(
      "every job to finish",
      async () => {
        const open = await db.job.count({ where: { state: { notIn: ["completed", "failed", "cancelled"] } } });
        return open === 0;
      },
      120_000,
    );
    expect(finished).toBe(true);
    for (const w of started) await stopGently(w);

    const jobs = await db.job.findMany({
      select: { id: true, state: true, attempts: true, claimedBy: true, host: true },
    });
    expect(jobs).toHaveLength(200);
    for (const j of jobs) {
      expect(j).toMatchObject({ state: "completed", attempts: 1 });
      // Each ran on the host it was addressed to.
      expect(j.claimedBy?.startsWith(`${j.host}|`)).toBe(true);
    }
    // Captures: exactly one checkpoint per capture job's lineage.
    const checkpoints = await db.snapshot.groupBy({
      by: ["workContextId"],
      where: { workContextId: { in: captureJobs.map((c) => c.workContextId) } },
      _count: { _all: true },
    });
    expect(checkpoints).toHaveLength(captureJobs.length);
    expect(checkpoints.every((c) => c._count._all === 1)).toBe(true);

    // Restores: each reported once, each worktree in place with the recorded tree.
    const restores = await db.restore.findMany({
      where: { id: { in: restoreJobs.map((r) => r.restoreId) } },
      select: { outcome: true, nextRestore: { select: { id: true } } },
    });
    expect(restores).toHaveLength(restoreJobs.length);
    expect(restores.every((r) => r.outcome === "restored" && r.nextRestore === null)).toBe(true);
    for (const r of restoreJobs) expect(git(r.into, ["write-tree"]).trim()).toBe(r.tree);
    for (const h of hosts)
      expect(readdirSync(join(h.roots.root, "workspaces")).sort()).toHaveLength(
        restoreJobs.filter((r) => r.host === h.name).length,
      );
    expect(await consistencyViolations(db)).toEqual([]);
  }, 180_000);
});
