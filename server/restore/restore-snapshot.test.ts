// Restoring from a shared catalog on a "second machine" (another directory, another object
// store), on SQLite and PostgreSQL: every capture fixture exactly, each degraded cause with its
// ladder result, and acquire + restore + report in one step.
import { existsSync } from "node:fs";
import { PassThrough } from "node:stream";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { StrataError } from "../domain/errors.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { captureInto, CHECKOUT_FIXTURES, unpushedOnMovedRemote, type CapturedCheckout } from "../testing/checkouts.ts";
import {
  addOrigin,
  commitAll,
  git,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";
import { appendCheckpoint } from "../lineage/checkpoints.ts";
import { acquireAndRestore, localRestorePort, restoreSnapshot } from "./restore-snapshot.ts";
import { exportSnapshot } from "../transfer/snapshot-export.ts";
import { getSnapshot } from "../lineage/snapshots.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { publishCaptureDirectly, publishCheckpointCapture, type CatalogCoordinates } from "../testing/restore.ts";

afterAll(removeTemporaryDirectories);

function secondMachine() {
  const dir = temporaryDirectory("strata-machine-");
  return { into: join(dir, "worktrees", "restored"), stateDir: join(dir, "state") };
}

function coordinates(): CatalogCoordinates {
  return { repository: { identity: `example.test/acme/${uniqueName("app")}` }, backendKind: "modal", baseImage: "img" };
}

function treeOf(dir: string): string {
  git(dir, ["update-index", "-q", "--really-refresh"]);
  expect(git(dir, ["diff-files", "--name-only"]).trim()).toBe("");
  return git(dir, ["write-tree"]).trim();
}

function headOf(dir: string): string {
  return git(dir, ["rev-parse", "HEAD"]).trim();
}

describeEachDatabase("restore from the catalog", (catalog) => {
  let agent: TestAgent;
  const port = () => localRestorePort(catalog().db, agent.scope);

  async function publish(captured: CapturedCheckout): Promise<string> {
    const db = catalog().db;
    if (!captured.manifest.head)
      return publishCaptureDirectly(db, agent.scope, coordinates(), captured.manifest, captured.blobs);
    return publishCheckpointCapture(
      db,
      agent.scope,
      { ...coordinates(), workContextId: uniqueName("wc"), observedHeadId: null },
      captured.manifest,
      captured.blobs,
    );
  }

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "restorer");
  });

  for (const fixture of CHECKOUT_FIXTURES) {
    it(`restores ${fixture.name} on a second machine with the same tree id`, async () => {
      const captured = await fixture.make();
      const snapshotId = await publish(captured);
      const machine = secondMachine();
      const report = await restoreSnapshot(port(), {
        snapshotId,
        into: machine.into,
        stateDir: machine.stateDir,
        hold: true,
      });
      expect(report.result.status, JSON.stringify(report.result.missing)).toBe("restored");
      expect(treeOf(machine.into)).toBe(captured.manifest.tree);
      expect(existsSync(join(machine.into, ".git", "objects", "info", "alternates"))).toBe(false);
      // The hold taken for the restore is released.
      const pins = await catalog().db.pin.findMany({ where: { snapshotId } });
      expect(pins.every((p) => p.released)).toBe(true);
    });
  }

  it("reads a manifest named directly by manifestDigest too", async () => {
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const snapshotId = await publishCaptureDirectly(
      catalog().db,
      agent.scope,
      coordinates(),
      captured.manifest,
      captured.blobs,
    );
    const machine = secondMachine();
    const report = await restoreSnapshot(port(), { snapshotId, into: machine.into, stateDir: machine.stateDir });
    expect(report.result.status).toBe("restored");
    expect(treeOf(machine.into)).toBe(captured.manifest.tree);
  });

  it("never restores another agent's snapshot", async () => {
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const snapshotId = await publish(captured);
    const other = await makeAgent(catalog().db, "other");
    const machine = secondMachine();
    const error = await restoreSnapshot(localRestorePort(catalog().db, other.scope), {
      snapshotId,
      into: machine.into,
      stateDir: machine.stateDir,
    }).catch((e: unknown) => e as StrataError);
    expect(error).toBeInstanceOf(StrataError);
    expect((error as StrataError).code).toBe("NOT_FOUND");
    expect(existsSync(join(machine.into, ".."))).toBe(false);
  });

  it("restores none of another agent's content through a checkpoint whose manifest names it", async () => {
    const db = catalog().db;
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const theirs = await getSnapshot(db, { snapshotId: await publish(captured), agent: agent.scope });
    // Another agent that learned the digests and the tree id appends them as its own checkpoint.
    const { treeId, head, branch, blobDigests } = theirs.manifest;
    const other = await makeAgent(db, "copier");
    const copied = await appendCheckpoint(db, {
      agent: other.scope,
      key: { ...coordinates(), workContextId: uniqueName("wc") },
      observedHeadId: null,
      manifest: { treeId: treeId!, head: head!, branch, blobDigests },
    });
    const machine = secondMachine();
    const outcome = await restoreSnapshot(localRestorePort(db, other.scope), {
      snapshotId: copied.snapshot.id,
      into: machine.into,
      stateDir: machine.stateDir,
    }).catch((e: unknown) => e as StrataError);
    // The bytes are not granted to it: they read as not stored, and nothing of them is placed.
    expect(outcome).toBeInstanceOf(StrataError);
    expect((outcome as StrataError).code).toBe("BLOB_MISSING");
    expect(existsSync(machine.into)).toBe(false);
    // Nor does an export of that checkpoint carry them.
    const exported = exportSnapshot(db, { agent: other.scope, snapshotId: copied.snapshot.id, out: new PassThrough() });
    await expect(exported).rejects.toMatchObject({ code: "BLOB_MISSING" });
  });

  // --- each degraded cause, forced ------------------------------------------------------------------

  /** A patch chain of three links in the catalog: L0 a.txt; L1 b.txt + new.txt; L2 a.txt, dir/c.txt deleted. */
  async function chainInCatalog() {
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const [l0, l1, l2] = captured.manifest.patches;
    if (!l0 || !l1 || !l2) throw new Error("expected three links");
    return { captured, links: [l0, l1, l2] as const };
  }

  async function restoreDegraded(snapshotId: string) {
    const machine = secondMachine();
    const report = await restoreSnapshot(port(), { snapshotId, into: machine.into, stateDir: machine.stateDir });
    return { report, result: report.result, into: machine.into };
  }

  it("a deleted blob: the recorded HEAD with the change sets before it", async () => {
    const { captured, links } = await chainInCatalog();
    const snapshotId = await publish(captured);
    await catalog().db.blob.deleteMany({ where: { digest: links[1].digest } });

    const { result, into } = await restoreDegraded(snapshotId);
    expect(result.status).toBe("degraded");
    expect(result.holds).toEqual({
      stage: "changes",
      head: captured.manifest.head,
      tree: links[0].tree,
      branch: "main",
      basis: "recorded-head",
      appliedChangeSets: [links[0].uuid],
    });
    expect(result.missing).toEqual({
      commits: [],
      changeSets: [
        {
          uuid: links[1].uuid,
          kind: "incremental",
          digest: links[1].digest,
          size: links[1].size,
          reason: "blob-missing",
        },
        {
          uuid: links[2].uuid,
          kind: "incremental",
          digest: links[2].digest,
          size: links[2].size,
          reason: "after-failure",
        },
      ],
      // L1 cannot be read, so its files are unknown; L2's are listed.
      paths: ["a.txt", "dir/c.txt"],
      pathsComplete: false,
      cause: "BLOB_MISSING",
      causeMessage: expect.stringContaining(links[1].digest),
      nextStep: expect.stringContaining(links[1].digest.slice(0, 12)),
    });
    expect(treeOf(into)).toBe(links[0].tree);
    expect(headOf(into)).toBe(captured.manifest.head);
  });

  it("a corrupt blob: the recorded HEAD alone when the first change set is damaged", async () => {
    const { captured, links } = await chainInCatalog();
    const snapshotId = await publish(captured);
    const db = catalog().db;
    const blob = await db.blob.findFirstOrThrow({ where: { digest: links[0].digest, state: "stored" } });
    await db.blobChunk.updateMany({
      where: { blobId: blob.id },
      data: { data: Buffer.from("not the patch at all\n") },
    });

    const { result, into } = await restoreDegraded(snapshotId);
    const headTree = git(captured.root, ["rev-parse", "HEAD^{tree}"]).trim();
    expect(result.holds).toMatchObject({
      stage: "head",
      head: captured.manifest.head,
      tree: headTree,
      appliedChangeSets: [],
    });
    expect(result.missing).toMatchObject({
      commits: [],
      changeSets: [
        { uuid: links[0].uuid, reason: "blob-corrupt" },
        { uuid: links[1].uuid, reason: "after-failure" },
        { uuid: links[2].uuid, reason: "after-failure" },
      ],
      paths: ["a.txt", "b.txt", "dir/c.txt", "new.txt"],
      pathsComplete: false,
      cause: "BLOB_CORRUPT",
    });
    expect(result.missing.changeSets).toHaveLength(3);
    expect(treeOf(into)).toBe(headTree);
  });

  it("unpushed commits whose bundle was dropped: the closest commit, then what is missing", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    addOrigin(root);
    const pushed = git(root, ["rev-parse", "HEAD"]).trim();
    const blobs = new Map<string, Buffer>();
    // An earlier checkpoint of this checkout at the pushed commit…
    write(root, "a.txt", "dirty at first\n");
    const earlier = await captureInto(root, blobs);
    // …the remote's branch moves on from another clone…
    const other = temporaryDirectory();
    git(other, ["clone", "--quiet", git(root, ["remote", "get-url", "origin"]).trim(), "."]);
    write(other, "elsewhere.txt", "pushed by someone else\n");
    const tip = commitAll(other, "elsewhere");
    git(other, ["push", "--quiet", "origin", "main"]);
    // …and this checkout makes two local commits and changes a file on top.
    git(root, ["checkout", "--quiet", "--", "a.txt"]);
    write(root, "b.txt", "local one\n");
    const one = commitAll(root, "local one");
    write(root, "b.txt", "local two\n");
    const two = commitAll(root, "local two");
    write(root, "c.txt", "dirty\n");
    const manifest = await captureInto(root, blobs, { previous: earlier });
    expect(manifest.bundle?.commits).toEqual([two, one]);

    const at = { ...coordinates(), workContextId: uniqueName("wc") };
    const db = catalog().db;
    const first = await publishCheckpointCapture(db, agent.scope, { ...at, observedHeadId: null }, earlier, blobs);
    const second = await publishCheckpointCapture(db, agent.scope, { ...at, observedHeadId: first }, manifest, blobs);
    await db.blob.deleteMany({ where: { digest: manifest.bundle!.digest } });

    const { result, into } = await restoreDegraded(second);
    expect(result.status).toBe("degraded");
    expect(result.holds).toEqual({
      stage: "closest-commit",
      head: pushed,
      tree: git(root, ["rev-parse", `${pushed}^{tree}`]).trim(),
      branch: "main",
      // The earlier checkpoint's commit comes before the branch's tip.
      basis: "earlier-snapshot",
      appliedChangeSets: [],
    });
    expect(result.missing).toEqual({
      commits: [two, one],
      changeSets: manifest.patches.map((p) => ({
        uuid: p.uuid,
        kind: p.kind,
        digest: p.digest,
        size: p.size,
        reason: "no-base",
      })),
      paths: ["c.txt"],
      pathsComplete: false,
      cause: "BLOB_MISSING",
      causeMessage: expect.stringContaining(manifest.bundle!.digest),
      nextStep: expect.stringMatching(new RegExp(`Or push commit ${two.slice(0, 12)}`)),
    });
    expect(headOf(into)).toBe(pushed);
    expect(tip).not.toBe(pushed);
  });

  it("unpushed commits whose remote moved away: nothing restored, the pushed base named as missing", async () => {
    const captured = await unpushedOnMovedRemote();
    const snapshotId = await publish(captured);
    const { report, result } = await restoreDegraded(snapshotId);
    expect(report.path).toBeNull();
    expect(result).toMatchObject({
      status: "unrestored",
      missing: { commits: [captured.base], cause: "COMMITS_UNAVAILABLE" },
    });
    expect(result.missing.nextStep).toContain(`pushed commit ${captured.base.slice(0, 12)}`);
    for (const commit of captured.manifest.bundle!.commits) {
      expect(result.missing.nextStep).not.toContain(commit.slice(0, 12));
    }
  });

  it("a change set that no longer applies: the links before it, DELTA_FAILED", async () => {
    const { captured, links } = await chainInCatalog();
    // A valid patch of another checkout, recorded in place of L1: its bytes are intact, git cannot apply it.
    const stranger = initRepository({ "b.txt": "someone else's b\n" });
    write(stranger, "b.txt", "their change\n");
    const strangerBlobs = new Map<string, Buffer>();
    const foreign = (await captureInto(stranger, strangerBlobs)).patches[0]!;
    const manifest: CaptureManifest = {
      ...captured.manifest,
      patches: captured.manifest.patches.map((p, i) =>
        i === 1 ? { ...p, digest: foreign.digest, size: foreign.size } : p,
      ),
    };
    const blobs = new Map([...captured.blobs, ...strangerBlobs]);
    const snapshotId = await publish({ ...captured, manifest, blobs });

    const { result, into } = await restoreDegraded(snapshotId);
    expect(result.holds).toMatchObject({ stage: "changes", tree: links[0].tree, appliedChangeSets: [links[0].uuid] });
    expect(result.missing).toMatchObject({
      commits: [],
      changeSets: [
        { uuid: links[1].uuid, reason: "does-not-apply" },
        { uuid: links[2].uuid, reason: "after-failure" },
      ],
      paths: ["a.txt", "b.txt", "dir/c.txt"],
      pathsComplete: true,
      cause: "DELTA_FAILED",
    });
    expect(treeOf(into)).toBe(links[0].tree);
  });

  it("a change set that applies but makes another tree: TREE_MISMATCH, nothing of it kept", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    addOrigin(root);
    const blobs = new Map<string, Buffer>();
    write(root, "a.txt", "one way\n");
    const oneWay = await captureInto(root, blobs);
    write(root, "a.txt", "another way\n");
    const otherWay = await captureInto(root, blobs);
    const manifest: CaptureManifest = {
      ...otherWay,
      patches: [{ ...otherWay.patches[0]!, digest: oneWay.patches[0]!.digest, size: oneWay.patches[0]!.size }],
    };
    const snapshotId = await publish({ root, manifest, blobs, earlier: [] });

    const { result, into } = await restoreDegraded(snapshotId);
    const headTree = git(root, ["rev-parse", "HEAD^{tree}"]).trim();
    expect(result.holds).toMatchObject({ stage: "head", tree: headTree, appliedChangeSets: [] });
    expect(result.missing).toMatchObject({
      commits: [],
      changeSets: [{ uuid: manifest.patches[0]!.uuid, reason: "tree-differs" }],
      paths: ["a.txt"],
      pathsComplete: true,
      cause: "TREE_MISMATCH",
    });
    expect(treeOf(into)).toBe(headTree);
  });

  // --- acquire, restore and report in one step --------------------------------------------------------

  async function checkpointLineage(captured: CapturedCheckout) {
    const at = { ...coordinates(), workContextId: uniqueName("wc") };
    const snapshotId = await publishCheckpointCapture(
      catalog().db,
      agent.scope,
      { ...at, observedHeadId: null },
      captured.manifest,
      captured.blobs,
    );
    const acquire = {
      repository: at.repository,
      backendKind: at.backendKind,
      baseImage: at.baseImage,
      canonicalRef: "main",
    };
    return { snapshotId, acquire: { ...acquire, workContextId: at.workContextId } };
  }

  it("acquires the work context's checkpoint, restores it and reports it restored", async () => {
    const captured = await CHECKOUT_FIXTURES[2]!.make();
    const { snapshotId, acquire } = await checkpointLineage(captured);
    const machine = secondMachine();
    const done = await acquireAndRestore(port(), {
      acquire,
      into: machine.into,
      host: "host-2",
      stateDir: machine.stateDir,
    });
    expect(done.path).toBe(machine.into);
    expect(done.steps.map((s) => [s.plan.rung, s.reported])).toEqual([["checkpoint", "restored"]]);
    expect(treeOf(machine.into)).toBe(captured.manifest.tree);
    const row = await catalog().db.restore.findUniqueOrThrow({ where: { id: done.steps[0]!.plan.restoreId } });
    expect(row).toMatchObject({ snapshotId, outcome: "restored", workspace: machine.into, host: "host-2" });
    expect((await catalog().db.pin.findFirstOrThrow({ where: { pinId: row.pinId! } })).released).toBe(true);
  });

  it("reports a partial restore degraded with its full result, keeping the pin", async () => {
    const { captured, links } = await chainInCatalog();
    const { acquire } = await checkpointLineage(captured);
    await catalog().db.blob.deleteMany({ where: { digest: links[2].digest } });
    const machine = secondMachine();
    const done = await acquireAndRestore(port(), {
      acquire,
      into: machine.into,
      host: "host-2",
      stateDir: machine.stateDir,
    });
    expect(done.steps.map((s) => s.reported)).toEqual(["degraded"]);
    const row = await catalog().db.restore.findUniqueOrThrow({ where: { id: done.steps[0]!.plan.restoreId } });
    expect(row.outcome).toBe("degraded");
    expect(row.result).toMatchObject({
      status: "degraded",
      holds: { stage: "changes", tree: links[1].tree, appliedChangeSets: [links[0].uuid, links[1].uuid] },
      missing: { cause: "BLOB_MISSING", changeSets: [{ uuid: links[2].uuid, reason: "blob-missing" }] },
      treeId: links[1].tree,
    });
    expect((await catalog().db.pin.findFirstOrThrow({ where: { pinId: row.pinId! } })).released).toBe(false);
    expect(treeOf(machine.into)).toBe(links[1].tree);
  });

  it("walks the decision's ladder down when nothing of the checkpoint can be restored", async () => {
    const captured = await CHECKOUT_FIXTURES[4]!.make(); // detached, no remotes: everything is in the bundle
    const { acquire } = await checkpointLineage(captured);
    await catalog().db.blob.deleteMany({ where: { digest: captured.manifest.bundle!.digest } });
    const machine = secondMachine();
    const done = await acquireAndRestore(port(), {
      acquire,
      into: machine.into,
      host: "host-2",
      stateDir: machine.stateDir,
    });
    expect(done.steps.map((s) => [s.plan.rung, s.reported])).toEqual([
      ["checkpoint", "failed"],
      ["cold", "restored"],
    ]);
    expect(done.path).toBeNull();
    expect(existsSync(machine.into)).toBe(false);
    const failed = await catalog().db.restore.findUniqueOrThrow({ where: { id: done.steps[0]!.plan.restoreId } });
    expect(failed).toMatchObject({ outcome: "failed", errorCode: "BLOB_MISSING" });
    expect(failed.result).toMatchObject({ detail: { status: "unrestored", holds: { stage: "nothing" } } });
  });

  it("refuses a record that fails the security checks and moves on", async () => {
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const manifest = { ...captured.manifest, remotes: [{ name: "origin", url: "ext::sh -c evil" }] };
    const { acquire } = await checkpointLineage({ ...captured, manifest });
    const machine = secondMachine();
    const done = await acquireAndRestore(port(), {
      acquire,
      into: machine.into,
      host: "host-2",
      stateDir: machine.stateDir,
    });
    expect(done.steps.map((s) => [s.plan.rung, s.reported, s.error?.code ?? null])).toEqual([
      ["checkpoint", "failed", "INVALID_SNAPSHOT"],
      ["cold", "restored", null],
    ]);
    expect(JSON.stringify(done, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain("evil");
  });

  it("refuses a non-empty target before acquiring anything", async () => {
    const captured = await CHECKOUT_FIXTURES[1]!.make();
    const { acquire } = await checkpointLineage(captured);
    const before = await catalog().db.restore.count();
    const error = await acquireAndRestore(port(), {
      acquire,
      into: captured.root,
      host: "host-2",
      stateDir: secondMachine().stateDir,
    }).catch((e: unknown) => e as StrataError);
    expect((error as StrataError).code).toBe("UNSAFE_TARGET");
    expect(await catalog().db.restore.count()).toBe(before);
  });
});
