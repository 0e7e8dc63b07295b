// Artifacts by backend kind on both databases: a capture records the artifact its backend minted;
// a publish naming a kind this server lacks is UNKNOWN_BACKEND, never a fallback; the sweep
// deletes a deleted snapshot's artifact through its backend once, records a failed delete on the
// row and tries it again, and leaves an artifact another live snapshot names.
import { randomUUID } from "node:crypto";
import { afterAll, expect, it } from "vitest";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import { statGrantedBlob } from "../content/blobs.ts";
import { isStrataError } from "../domain/errors.ts";
import { collectGarbage } from "../gc/collect-garbage.ts";
import { localRestorePort, restoreSnapshot } from "../restore/restore-snapshot.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName } from "../testing/lineage.ts";
import { initRepository, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { appendCheckpoint } from "./checkpoints.ts";
import { sweepSnapshots } from "./sweeper.ts";

afterAll(removeTemporaryDirectories);

const DAY = 24 * 3600 * 1000;

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isStrataError(error)) return error.code;
    throw error;
  }
  throw new Error("expected a StrataError");
}

describeEachDatabase("artifacts by backend kind", (catalog) => {
  async function twoCheckpoints() {
    const db = catalog().db;
    const { scope } = await makeAgent(db);
    const root = initRepository({ "a.txt": "a\n" });
    const target = {
      kind: "checkpoint" as const,
      key: {
        repository: { identity: `example.test/acme/${uniqueName("reclaim")}` },
        backendKind: "local",
        baseImage: "img",
        workContextId: uniqueName("wc"),
      },
    };
    write(root, "a.txt", "first\n");
    const first = await captureAndPublish(localCatalog(db, scope), { dir: root, target });
    write(root, "a.txt", "second\n");
    const second = await captureAndPublish(localCatalog(db, scope), { dir: root, target });
    return { db, scope, root, target, first, second };
  }

  /** Supersedes the first beyond retention: swept to deleting, collected to deleted. */
  async function deleteFirst(db: ReturnType<typeof catalog>["db"], now: Date) {
    await sweepSnapshots(db, { now });
    await collectGarbage(db, { force: true, graceSeconds: 0 });
  }

  it("records the git artifact a capture minted, and refuses artifacts it cannot keep, storing nothing", async () => {
    const { db, scope, target, first } = await twoCheckpoints();
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: first.snapshotId } });
    expect(row).toMatchObject({ artifactKind: "git", artifactRef: first.manifestBlobDigest });

    const before = await db.snapshot.count();
    const manifest = {
      treeId: "a".repeat(40),
      head: "b".repeat(40),
      branch: "main",
      blobDigests: ["c".repeat(64)],
      sizeBytes: 1,
    };
    const append = (artifact: { kind: string; ref: string }) =>
      appendCheckpoint(db, { agent: scope, key: target.key, observedHeadId: null, manifest, artifact });
    expect(await code(append({ kind: "modal", ref: "c".repeat(64) }))).toBe("UNKNOWN_BACKEND");
    expect(await code(append({ kind: "dir", ref: "c".repeat(64) }))).toBe("INVALID_INPUT");
    expect(await code(append({ kind: "git", ref: "d".repeat(64) }))).toBe("INVALID_INPUT");
    expect(await db.snapshot.count()).toBe(before);
  });

  it("deletes a deleted snapshot's artifact through its backend once", async () => {
    const { db, scope, first, second } = await twoCheckpoints();
    const now = new Date(Date.now() + 8 * DAY);
    await deleteFirst(db, now);
    const swept = await sweepSnapshots(db, { now });
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: first.snapshotId } });
    expect(row.state).toBe("deleted");
    expect(row.artifactDeletedAt).not.toBeNull();
    expect(swept.reclaimed.deleted).toBeGreaterThanOrEqual(1);
    expect(await statGrantedBlob(db, scope.agentId, first.manifestBlobDigest!)).toBeNull();
    // Once: the next sweep does not look at it again.
    expect((await sweepSnapshots(db, { now })).reclaimed.failed).toEqual([]);
    const again = await db.snapshot.findUniqueOrThrow({ where: { id: first.snapshotId } });
    expect(again.artifactDeletedAt).toEqual(row.artifactDeletedAt);
    // The live snapshot's artifact is untouched and restores.
    const into = `${temporaryDirectory()}/w`;
    const restored = await restoreSnapshot(localRestorePort(db, scope), {
      snapshotId: second.snapshotId,
      into,
      stateDir: temporaryDirectory(),
    });
    expect(restored.result.status).toBe("restored");
  });

  it("records a failed delete on the row, keeps naming the artifact, and tries again", async () => {
    const { db, first } = await twoCheckpoints();
    const now = new Date(Date.now() + 8 * DAY);
    await deleteFirst(db, now);
    // A kind this server does not have (a row written by another version, say).
    await db.snapshot.update({ where: { id: first.snapshotId }, data: { artifactKind: "modal" } });
    const swept = await sweepSnapshots(db, { now });
    expect(swept.reclaimed.failed).toContainEqual(
      expect.objectContaining({
        snapshotId: first.snapshotId,
        kind: "modal",
        error: expect.stringContaining("UNKNOWN_BACKEND"),
      }),
    );
    const failed = await db.snapshot.findUniqueOrThrow({ where: { id: first.snapshotId } });
    expect(failed).toMatchObject({
      artifactRef: first.manifestBlobDigest,
      artifactDeletedAt: null,
      reclaimAttempts: 1,
    });
    expect(failed.reclaimError).toContain("UNKNOWN_BACKEND");

    await db.snapshot.update({ where: { id: first.snapshotId }, data: { artifactKind: "git" } });
    await sweepSnapshots(db, { now });
    const done = await db.snapshot.findUniqueOrThrow({ where: { id: first.snapshotId } });
    expect(done.artifactDeletedAt).not.toBeNull();
    expect(done.reclaimError).toBeNull();
  });

  it("leaves an artifact another live snapshot names", async () => {
    const { db, first, second } = await twoCheckpoints();
    const now = new Date(Date.now() + 8 * DAY);
    await deleteFirst(db, now);
    await db.snapshot.update({ where: { id: second.snapshotId }, data: { artifactRef: first.manifestBlobDigest } });
    const swept = await sweepSnapshots(db, { now });
    expect(swept.reclaimed.shared).toBeGreaterThanOrEqual(1);
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: first.snapshotId } })).artifactDeletedAt).toBeNull();
  });

  it("restores a snapshot only through the backend that minted it", async () => {
    const { db, scope, second } = await twoCheckpoints();
    await db.snapshot.update({
      where: { id: second.snapshotId },
      data: { artifactKind: `unknown-${randomUUID().slice(0, 4)}` },
    });
    const parent = temporaryDirectory();
    expect(
      await code(
        restoreSnapshot(localRestorePort(db, scope), {
          snapshotId: second.snapshotId,
          into: `${parent}/w`,
          stateDir: temporaryDirectory(),
        }),
      ),
    ).toBe("UNKNOWN_BACKEND");
  });
});
