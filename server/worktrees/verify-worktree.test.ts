// Verifying checkouts against their snapshots with real git: the snapshot read from a catalog
// of each kind (as `strata verify` reads it), restored on a "second machine" or left where it
// was captured, then edited, committed, moved. Every check asserts that the checkout is byte
// for byte what it was before (.git included) and that `git status` says the same.
import { randomUUID } from "node:crypto";
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaptureManifest } from "../domain/capture-manifest.ts";
import { isStrataError, type StrataError } from "../domain/errors.ts";
import { isHeadOnlyAdvance } from "../restore/engine/worktree-drift.ts";
import { memoryBlobSource } from "../restore/engine/restore-blobs.ts";
import { restoreWorktree } from "../restore/engine/restore.ts";
import { localRestorePort, restoreSnapshot } from "../restore/restore-snapshot.ts";
import { captureInto, CHECKOUT_FIXTURES, crlfBeforeTextAttribute } from "../testing/checkouts.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import {
  commitAll,
  expectUntouched,
  git,
  initRepository,
  remove,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";
import { publishCheckpointCapture } from "../testing/restore.ts";
import { recordedSnapshotOf } from "./pool.ts";
import { checkSnapshotWorktree, checkWorktree, verifyWorktree, type WorktreeBinding } from "./verify-worktree.ts";
import { judgeCleanliness } from "./worktree-cleanliness.ts";

afterAll(removeTemporaryDirectories);

const SNAPSHOT_ID = "0d3c1a52-8d0e-4a4e-9a56-3f1e8b2c9d71";

function secondMachine() {
  const dir = temporaryDirectory("strata-machine-");
  return { into: join(dir, "worktrees", "restored"), stateDir: join(dir, "state") };
}

/** A committed repository (two commits) with recorded edits on top: one edited, one new, one deleted file. */
async function editedCheckout(files: Record<string, string> = {}, options: Parameters<typeof captureInto>[2] = {}) {
  const root = initRepository({
    "a.txt": "a\n",
    "b.txt": "b\n",
    "dir/c.txt": "c\n",
    ".gitignore": "*.log\n",
    ".fixture": `${randomUUID()}\n`,
  });
  write(root, "b.txt", "b, second commit\n");
  commitAll(root, "second");
  for (const [path, content] of Object.entries(files)) write(root, path, content);
  if (Object.keys(files).length > 0) commitAll(root, "more files");
  write(root, "a.txt", "a, edited\n");
  write(root, "new.txt", "new\n");
  remove(root, "dir/c.txt");
  const blobs = new Map<string, Buffer>();
  const manifest = await captureInto(root, blobs, options);
  return { root, manifest, blobs };
}

function bindingOf(manifest: CaptureManifest): WorktreeBinding {
  return { snapshotId: SNAPSHOT_ID, manifest };
}

async function driftError(promise: Promise<unknown>): Promise<StrataError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isStrataError(error, "WORKSPACE_DRIFT")) throw new Error(`expected WORKSPACE_DRIFT, got ${String(error)}`);
  return error;
}

describeEachDatabase("verify a checkout against a snapshot of the catalog", (catalog) => {
  let agent: TestAgent;
  const port = () => localRestorePort(catalog().db, agent.scope);

  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "verifier");
  });

  async function publish(manifest: CaptureManifest, blobs: Map<string, Buffer>): Promise<string> {
    return publishCheckpointCapture(
      catalog().db,
      agent.scope,
      {
        repository: { identity: `example.test/acme/${uniqueName("verify")}` },
        backendKind: "modal",
        baseImage: "img",
        workContextId: uniqueName("wc"),
        observedHeadId: null,
      },
      manifest,
      blobs,
    );
  }

  async function published(...args: Parameters<typeof editedCheckout>) {
    const checkout = await editedCheckout(...args);
    return { ...checkout, snapshotId: await publish(checkout.manifest, checkout.blobs) };
  }

  async function restored(snapshotId: string): Promise<string> {
    const machine = secondMachine();
    const report = await restoreSnapshot(port(), { snapshotId, into: machine.into, stateDir: machine.stateDir });
    expect(report.result.status).toBe("restored");
    return machine.into;
  }

  it("matches after a restore, and where it was captured, writing nothing", async () => {
    const { root, manifest, snapshotId } = await published();
    const into = await restored(snapshotId);
    for (const dir of [into, root]) {
      const untouched = expectUntouched(dir);
      const verification = await checkSnapshotWorktree(port(), { snapshotId, dir });
      expect(verification).toEqual({
        snapshotId,
        root: dir,
        matches: true,
        head: { recorded: manifest.head, current: manifest.head },
        branch: { recorded: "main", current: "main" },
        tree: manifest.tree,
        headMoved: false,
        headOnlyAdvanced: false,
        treeAvailable: true,
        drift: { added: 0, modified: 0, deleted: 0, total: 0, paths: [] },
        leftOut: { total: 0, paths: [] },
      });
      untouched();
    }
  });

  it("reports an edited, a deleted and an untracked file as drift, sorted and counted; ignored and left-out new files are not", async () => {
    const { snapshotId } = await published();
    const into = await restored(snapshotId);
    write(into, "new.txt", "new, edited after the restore\n");
    remove(into, "b.txt");
    write(into, "0-untracked.txt", "not in the snapshot\n");
    write(into, "deep/er/untracked.txt", "nor this\n");
    write(into, "debug.log", "ignored by .gitignore\n");
    write(into, ".env.local", "denied: a capture leaves it out\n");
    const untouched = expectUntouched(into);
    const verification = await checkSnapshotWorktree(port(), { snapshotId, dir: into });
    expect(verification).toMatchObject({ matches: false, headMoved: false, headOnlyAdvanced: false });
    expect(verification.drift).toEqual({
      added: 2,
      modified: 1,
      deleted: 1,
      total: 4,
      paths: [
        { path: "0-untracked.txt", change: "added" },
        { path: "b.txt", change: "deleted" },
        { path: "deep/er/untracked.txt", change: "added" },
        { path: "new.txt", change: "modified" },
      ],
    });
    expect(verification.leftOut).toEqual({
      total: 1,
      paths: [{ path: ".env.local", reason: "denied", detail: "matches .env*" }],
    });

    const capped = await checkSnapshotWorktree(port(), { snapshotId, dir: into, maxPaths: 2 });
    expect(capped.drift).toMatchObject({ total: 4, paths: verification.drift.paths.slice(0, 2) });
    untouched();
  });

  it("reports a HEAD that moved, forward over the same files (headOnlyAdvanced) or not", async () => {
    const { root, manifest, snapshotId } = await published();
    const recorded = manifest.head ?? "";
    const untouched = expectUntouched(root);
    expect((await checkSnapshotWorktree(port(), { snapshotId, dir: root })).matches).toBe(true);
    untouched();

    // Committing exactly the recorded edits: HEAD advanced, the files are the recorded tree.
    const advanced = commitAll(root, "the recorded edits");
    let verification = await checkSnapshotWorktree(port(), { snapshotId, dir: root });
    expect(verification).toMatchObject({
      matches: false,
      headMoved: true,
      headOnlyAdvanced: true,
      head: { recorded, current: advanced },
      drift: { total: 0 },
    });
    expect(await isHeadOnlyAdvance(root, recorded, manifest.tree)).toBe(true);
    expect(await isHeadOnlyAdvance(root, advanced, manifest.tree)).toBe(false);

    // Backwards, over the same files: moved, not advanced.
    git(root, ["reset", "--quiet", "--soft", "HEAD~2"]);
    verification = await checkSnapshotWorktree(port(), { snapshotId, dir: root });
    expect(verification).toMatchObject({
      matches: false,
      headMoved: true,
      headOnlyAdvanced: false,
      drift: { total: 0 },
    });
    expect(await isHeadOnlyAdvance(root, recorded, manifest.tree)).toBe(false);

    // Forward, with one more edit committed: moved, and drifted.
    git(root, ["reset", "--quiet", "--soft", advanced]);
    write(root, "a.txt", "a, edited again\n");
    commitAll(root, "one more edit");
    verification = await checkSnapshotWorktree(port(), { snapshotId, dir: root });
    expect(verification).toMatchObject({
      headMoved: true,
      headOnlyAdvanced: false,
      drift: { total: 1, paths: [{ path: "a.txt", change: "modified" }] },
    });
    expect(await isHeadOnlyAdvance(root, recorded, manifest.tree)).toBe(false);
  });

  it("compares recorded files this host leaves out (too large, snapshot-ignored): unchanged they match, changed they drift", async () => {
    const big = "x".repeat(2000);
    const rules = { maxFileBytes: 1000 };
    const { root, snapshotId } = await published(
      { "big.bin": big, "notes/private.txt": "recorded\n", ".strata/snapshot-ignore": "notes/\n" },
      rules,
    );
    // New files the same rules leave out are not drift.
    write(root, "huge-new.bin", "y".repeat(3000));
    write(root, "notes/new.txt", "snapshot-ignored\n");
    const check = () => checkSnapshotWorktree(port(), { snapshotId, dir: root, rules });
    const untouched = expectUntouched(root);
    const unchanged = await check();
    expect(unchanged.matches).toBe(true);
    expect(unchanged.leftOut.paths.map((p) => [p.path, p.reason])).toEqual([
      ["huge-new.bin", "too-large"],
      ["notes/new.txt", "snapshot-ignore"],
    ]);
    untouched();

    write(root, "big.bin", `${big}, changed`);
    write(root, "notes/private.txt", "changed\n");
    const changed = await check();
    expect(changed).toMatchObject({ matches: false, headMoved: false });
    expect(changed.drift.paths).toEqual([
      { path: "big.bin", change: "modified" },
      { path: "notes/private.txt", change: "modified" },
    ]);
  });

  it("throws WORKSPACE_DRIFT with what drifted, and resolves when the checkout matches", async () => {
    const { manifest, snapshotId } = await published();
    const into = await restored(snapshotId);
    await expect(verifyWorktree({ snapshotId, manifest }, into)).resolves.toMatchObject({ matches: true });

    write(into, "a.txt", "drifted\n");
    const error = await driftError(verifyWorktree({ snapshotId, manifest }, into));
    expect(error.retryable).toBe(false);
    expect(error.message).toContain("1 path(s) differ from the recorded tree (1 modified)");
    expect(error.hint).toContain(`strata restore ${snapshotId}`);
    expect(error.data).toMatchObject({ drift: { total: 1, paths: [{ path: "a.txt", change: "modified" }] } });

    write(into, "a.txt", "a, edited\n");
    commitAll(into, "the recorded edits");
    const advanced = await driftError(verifyWorktree({ snapshotId, manifest }, into));
    expect(advanced.message).toContain("only forward");
    expect(advanced.hint).toContain("work may continue here");
    expect(advanced.data).toMatchObject({ headMoved: true, headOnlyAdvanced: true, drift: { total: 0 } });
  });
});

describe("verify a checkout against a snapshot record", () => {
  for (const fixture of CHECKOUT_FIXTURES) {
    it(`matches a restore of ${fixture.name}`, async () => {
      const captured = await fixture.make();
      const machine = secondMachine();
      const record = bindingOf(captured.manifest);
      const report = await restoreWorktree(record, machine.into, {
        blobs: memoryBlobSource(captured.blobs),
        stateDir: machine.stateDir,
      });
      expect(report.result.status).toBe("restored");
      const untouched = expectUntouched(machine.into);
      const verification = await verifyWorktree(record, machine.into);
      expect(verification.matches).toBe(true);
      untouched();
    });
  }

  it("counts a tracked edit the capture left out (too large) as drift where it was captured", async () => {
    const limits = CHECKOUT_FIXTURES.find((f) => f.name === "size limits");
    const captured = await limits!.make();
    const verification = await checkWorktree(bindingOf(captured.manifest), captured.root, {
      rules: { maxFileBytes: 1000, maxSnapshotBytes: 700 },
    });
    expect(verification.drift.paths).toContainEqual({ path: "tracked.txt", change: "modified" });
    expect(verification.matches).toBe(false);
  });

  it("compares files recorded verbatim by their recorded bytes (babel's `* text eol=lf`)", async () => {
    // A file committed with CRLF before `* text eol=lf` came in (older than the index, so git
    // never reads it again), and one with a CR before a CRLF, which git stores with a CRLF.
    const root = crlfBeforeTextAttribute("* text eol=lf\n");
    write(root, "data.bin", "ab\r\r\ncd\r\n");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    expect(manifest.verbatim?.map((f) => f.path)).toEqual(["data.bin", "legacy.txt"]);
    expect((await checkWorktree(bindingOf(manifest), root)).matches).toBe(true);

    const machine = secondMachine();
    const report = await restoreWorktree(bindingOf(manifest), machine.into, {
      blobs: memoryBlobSource(blobs),
      stateDir: machine.stateDir,
    });
    expect(report.result.status).toBe("restored");
    const untouched = expectUntouched(machine.into);
    expect((await verifyWorktree(bindingOf(manifest), machine.into)).matches).toBe(true);
    // git's own re-read takes the restored legacy.txt for another blob: that alone is no drift.
    const plain = await checkWorktree(bindingOf({ ...manifest, verbatim: undefined }), machine.into);
    expect(plain.drift.paths).toEqual([{ path: "legacy.txt", change: "modified" }]);
    // A pool's record of the snapshot keeps its verbatim files: such a worktree is idle-clean.
    const recorded = recordedSnapshotOf(SNAPSHOT_ID, manifest);
    expect(await judgeCleanliness(machine.into, recorded)).toEqual({ state: "clean", detail: null });
    untouched();

    // Bytes git reads back as the same blob are still other bytes; a new mode is drift too.
    write(machine.into, "data.bin", "ab\r\r\ncd\n");
    write(machine.into, "legacy.txt", "one\r\ntwo\r\nthree\r\n");
    const edited = await checkWorktree(bindingOf(manifest), machine.into);
    expect(edited.matches).toBe(false);
    expect(edited.drift.paths).toEqual([
      { path: "data.bin", change: "modified" },
      { path: "legacy.txt", change: "modified" },
    ]);
    write(machine.into, "data.bin", "ab\r\r\ncd\r\n");
    write(machine.into, "legacy.txt", "one\r\ntwo\r\n");
    expect((await checkWorktree(bindingOf(manifest), machine.into)).matches).toBe(true);
    chmodSync(join(machine.into, "data.bin"), 0o755);
    remove(machine.into, "legacy.txt");
    expect((await checkWorktree(bindingOf(manifest), machine.into)).drift.paths).toEqual([
      { path: "data.bin", change: "modified" },
      { path: "legacy.txt", change: "deleted" },
    ]);
  });

  it("counts a repository that does not hold the recorded tree as drifted", async () => {
    const { manifest } = await editedCheckout();
    const other = initRepository({ "other.txt": `${randomUUID()}\n` });
    const untouched = expectUntouched(other);
    const verification = await checkWorktree(bindingOf(manifest), other);
    expect(verification).toMatchObject({
      matches: false,
      treeAvailable: false,
      headMoved: true,
      headOnlyAdvanced: false,
    });
    expect(await isHeadOnlyAdvance(other, manifest.head, manifest.tree)).toBe(false);
    untouched();
  });

  it("refuses a directory that is not a checkout and a record that fails the checks", async () => {
    const { root, manifest } = await editedCheckout();
    const missing = await checkWorktree(bindingOf(manifest), join(root, "no-such-dir")).catch((e: unknown) => e);
    expect(isStrataError(missing, "NOT_A_REPOSITORY")).toBe(true);
    const unsafe = await checkWorktree(bindingOf({ ...manifest, tree: "--output=/tmp/x" }), root).catch(
      (e: unknown) => e,
    );
    expect(isStrataError(unsafe, "INVALID_SNAPSHOT")).toBe(true);
  });
});
