// Git LFS through the catalog, on SQLite and PostgreSQL, with real git-lfs: a capture publishes
// the object of an LFS file edited since HEAD as one of the snapshot's blobs, and a restore on a
// second machine gives that file its edited content, downloads committed files' objects from the
// recorded remote, and names exactly the file whose object nobody has.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { captureAndPublish, localCatalog } from "../capture/capture-publish.ts";
import { getSnapshot } from "../lineage/snapshots.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { lfsCheckout, lfsOid, pushWithoutLfsObjects, requireGitLfs } from "../testing/lfs.ts";
import { makeAgent, uniqueName } from "../testing/lineage.ts";
import { git, removeTemporaryDirectories, temporaryDirectory, write } from "../testing/repos.ts";
import { localRestorePort, restoreSnapshot } from "./restore-snapshot.ts";

beforeAll(requireGitLfs);
afterAll(removeTemporaryDirectories);

describeEachDatabase("Git LFS files restored from the catalog", (catalog) => {
  it("restores an LFS file edited since HEAD and names exactly the file whose object is missing", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db);
    const model = Buffer.from("model weights \u0000 v1\n");
    const { root } = lfsCheckout({ "models/model.bin": model, "README.md": "models\n" });
    const lost = Buffer.from("committed, pushed without its LFS object \u0000\n");
    pushWithoutLfsObjects(root, { "models/lost.bin": lost });
    const edited = Buffer.from("model weights \u0000 v2, edited since HEAD\n");
    write(root, "models/model.bin", edited);

    const published = await captureAndPublish(localCatalog(db, agent.scope), {
      dir: root,
      target: {
        kind: "checkpoint",
        key: {
          repository: { identity: `example.invalid/${uniqueName("lfs")}` },
          backendKind: "local",
          baseImage: "test-image",
          workContextId: uniqueName("wc"),
        },
      },
    });
    expect(published.outcome).toBe("appended");
    // The edit's content is one of the snapshot's blobs, under its LFS oid.
    const snapshot = await getSnapshot(db, { snapshotId: published.snapshotId, agent: agent.scope });
    expect(snapshot.manifest.blobDigests).toContain(lfsOid(edited));

    const machine = temporaryDirectory("strata-machine-");
    const into = join(machine, "restored");
    const report = await restoreSnapshot(localRestorePort(db, agent.scope), {
      snapshotId: published.snapshotId,
      into,
      stateDir: join(machine, "state"),
    });
    expect(report.result.status, JSON.stringify(report.result.missing)).toBe("restored");
    expect(readFileSync(join(into, "models/model.bin"))).toEqual(edited);
    expect(readFileSync(join(into, "README.md"), "utf8")).toBe("models\n");
    expect(readFileSync(join(into, "models/lost.bin"), "utf8")).toBe(
      `version https://git-lfs.github.com/spec/v1\noid sha256:${lfsOid(lost)}\nsize ${lost.length}\n`,
    );
    const warnings = report.result.warnings.filter((w) => w.kind === "lfs-objects-unavailable");
    expect(warnings.map((w) => w.paths)).toEqual([["models/lost.bin"]]);
    // Verified to the recorded tree: the pointer is what the tree holds.
    git(into, ["update-index", "-q", "--really-refresh"]);
    expect(git(into, ["diff-files", "--name-only"]).trim()).toBe("");
    expect(git(into, ["write-tree"]).trim()).toBe(published.manifest.tree);
  }, 60_000);
});
