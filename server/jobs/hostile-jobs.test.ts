// Hostile jobs on a shared worker host (real `strata worker` processes, real git, both databases):
// agent B aims capture and restore jobs at agent A's restored directory, at a symbolic link into
// it, at `..` escapes, at /etc and at paths outside every root. Each is refused with the same
// typed answer (PATH_NOT_ALLOWED, one message whether the path exists or not), nothing is
// written on the host (file-tree fingerprints before and after), B gains no snapshot, and A's own
// jobs still work.
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import type { JobView } from "../domain/jobs.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { testHostRoots, treeFingerprint, type TestHostRoots } from "../testing/host-roots.ts";
import { freshLineageKey, makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import {
  addOrigin,
  dirtyRepository,
  git,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";
import { killWorkers, startWorker, stopGently, waitFor, type WorkerChild } from "../testing/worker-processes.ts";
import { enqueueCapture, enqueueRestore } from "./agent-jobs.ts";
import { JobQueue } from "./queue.ts";

afterAll(removeTemporaryDirectories);
afterAll(killWorkers);

/** A checkout with an origin, a dirty file and an untracked one. */
function checkout(label: string): string {
  const root = dirtyRepository(label);
  addOrigin(root);
  return root;
}

describeEachDatabase("hostile jobs on a shared worker host", (catalog) => {
  let a: TestAgent;
  let b: TestAgent;
  let roots: TestHostRoots;
  let host: string;
  let worker: WorkerChild;
  let queue: JobQueue;

  beforeAll(async () => {
    a = await makeAgent(catalog().db, "tenant-a");
    b = await makeAgent(catalog().db, "tenant-b");
    roots = testHostRoots();
    host = uniqueName("shared");
    queue = new JobQueue(catalog().db);
    worker = startWorker(catalog().url, host, temporaryDirectory("strata-shared-host-"), roots.env);
  });
  afterAll(async () => {
    await stopGently(worker);
  });

  const ended = (id: string) =>
    waitFor(`job ${id} to end`, async () => {
      const job = await queue.get(catalog().db, id);
      return job && ["completed", "failed", "cancelled"].includes(job.state) ? job : null;
    });

  function restoreInput(key: ReturnType<typeof freshLineageKey>, workspace: string) {
    return {
      repository: key.repository,
      backendKind: key.backendKind,
      baseImage: key.baseImage,
      canonicalRef: "refs/heads/main",
      workContextId: key.workContextId,
      workspace,
      host,
    };
  }

  it("refuses every capture and restore of B's outside B's own directories, the same way, writing nothing", async () => {
    const db = catalog().db;

    // A captures its checkout (in its folder of the agent root) and restores it under the root.
    const keyA = freshLineageKey("a");
    const repoA = roots.give(a.name, checkout("a"));
    const capturedA = await ended((await enqueueCapture(db, { host, dir: repoA, key: keyA, agent: a.scope })).id);
    expect(capturedA).toMatchObject({ state: "completed" });
    const restoredA = join(roots.root, "a-work");
    const restoreA = await enqueueRestore(db, { ...restoreInput(keyA, restoredA), agent: a.scope });
    expect(await ended(restoreA.job!.id)).toMatchObject({ state: "completed" });
    expect(git(restoredA, ["status", "--porcelain"])).toContain("notes/");

    // B has a checkpoint of its own (captured on its machine), so its restore jobs have something to restore.
    const keyB = freshLineageKey("b");
    const repoB = roots.give(b.name, checkout("b"));
    await captureAndPublish(localCatalog(db, b.scope), { dir: repoB, target: { kind: "checkpoint", key: keyB } });
    const folderB = roots.folderOf(b.name);
    symlinkSync(restoredA, join(folderB, "link-to-a"));
    const outside = initRepository({ "secret.txt": "outside every root\n" });
    mkdirSync(join(roots.agentRoot, "nobody"));

    const captureDirs = [
      restoredA, // A's restored checkout
      join(folderB, "link-to-a"), // a symbolic link from B's own folder into it
      join(folderB, "..", a.name, "repo-escape", "..", repoA.split("/").pop()!), // `..` out of B's folder into A's
      join(roots.root, "..", roots.agentRoot.split("/").pop()!, a.name), // `..` out of the root
      "/etc",
      outside, // a checkout outside every root
      join(roots.root, "does-not-exist"), // nothing there at all
    ];
    const restoreTargets = [
      restoredA, // A's checkout itself
      join(restoredA, "inside"), // inside A's checkout
      join(folderB, "link-to-a", "inside"), // inside it through the link
      join(roots.agentRoot, a.name, "new"), // in A's folder of the agent root
      join(roots.agentRoot, "nobody", "new"), // in a folder that is no agent's own
      join(folderB, "..", "..", "escape"), // `..` out of every root
      "/etc/strata-hostile",
      join(outside, "new"),
      roots.root, // the root itself
    ];

    const watched = [roots.root, roots.agentRoot, outside];
    const before = watched.map(treeFingerprint);
    const snapshotsOfB = () => db.snapshot.count({ where: { agentId: b.scope.agentId } });
    const snapshotsBefore = await snapshotsOfB();

    const jobs: JobView[] = [];
    for (const dir of captureDirs) jobs.push(await enqueueCapture(db, { host, dir, key: keyB, agent: b.scope }));
    for (const workspace of restoreTargets) {
      const { job } = await enqueueRestore(db, { ...restoreInput(keyB, workspace), agent: b.scope });
      jobs.push(job!);
    }
    const results = await Promise.all(jobs.map((j) => ended(j.id)));

    for (const [i, job] of results.entries()) {
      expect({ i, state: job.state, code: job.error?.code }).toEqual({ i, state: "failed", code: "PATH_NOT_ALLOWED" });
      expect(job.attempts).toBe(1);
    }
    // One answer per kind of job: nothing in it tells an existing path from a missing one.
    const messages = (kind: string) => new Set(results.filter((j) => j.kind === kind).map((j) => j.error?.message));
    expect(messages("capture").size).toBe(1);
    expect(messages("restore").size).toBe(1);
    expect([...messages("capture"), ...messages("restore")].join(" ")).not.toMatch(/a-work|tenant|etc|does-not/);

    expect(watched.map(treeFingerprint)).toEqual(before);
    expect(await snapshotsOfB()).toBe(snapshotsBefore);
    // The refused restores were reported failed and hold nothing.
    const restoreIds = results
      .filter((j) => j.kind === "restore")
      .map((j) => (j.data as { restoreId: string }).restoreId);
    const restores = await db.restore.findMany({
      where: { id: { in: restoreIds } },
      select: { outcome: true, pinId: true },
    });
    expect(restores.map((r) => r.outcome)).toEqual(restoreIds.map(() => "failed"));
    const pins = await db.pin.findMany({ where: { pinId: { in: restores.map((r) => r.pinId!) } } });
    expect(pins.every((p) => p.releasedAt !== null)).toBe(true);

    // A's own jobs still work: a capture of the checkout its restore made, and a second restore.
    write(restoredA, "src/main.txt", "one\ntwo\nthree (A goes on)\n");
    const again = await ended((await enqueueCapture(db, { host, dir: restoredA, key: keyA, agent: a.scope })).id);
    expect(again).toMatchObject({ state: "completed", result: { outcome: "appended" } });
    const second = join(roots.root, "a-second");
    const restoreA2 = await enqueueRestore(db, { ...restoreInput(keyA, second), agent: a.scope });
    expect(await ended(restoreA2.job!.id)).toMatchObject({ state: "completed" });
    expect(git(second, ["diff", "HEAD", "--stat"])).toContain("src/main.txt");
  }, 180_000);
});
