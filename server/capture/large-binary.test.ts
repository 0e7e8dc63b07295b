// A large binary file, modified between captures: the patch names it and its content travels
// whole, as a blob of its own, instead of as a binary delta (a delta of a 30 MB file cost 3.2 s
// of git diff-index --binary at every capture). It restores exactly, verified to the tree id,
// from a catalog of each kind.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { WHOLE_FILE_THRESHOLD_BYTES } from "../git/commands.ts";
import { localRestorePort, restoreSnapshot } from "../restore/restore-snapshot.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName } from "../testing/lineage.ts";
import {
  addOrigin,
  git,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";
import { captureAndPublish, localCatalog } from "./capture-publish.ts";

afterAll(removeTemporaryDirectories);

const SIZE = 30 * 1024 * 1024;

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

describeEachDatabase("a large binary file changed in a checkout", (catalog) => {
  it("is captured whole, not as a delta, and restores exactly", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db);
    const original = randomBytes(SIZE);
    const root = initRepository({ "README.md": "model\n", "assets/model.bin": original });
    addOrigin(root);
    const target = {
      kind: "checkpoint" as const,
      key: {
        repository: { identity: `example.invalid/${uniqueName("large")}` },
        backendKind: "local",
        baseImage: "test-image",
        workContextId: uniqueName("wc"),
      },
    };

    // A few bytes changed in the middle, as a tool rewriting a database or a model file does.
    const modified = Buffer.from(original);
    randomBytes(64).copy(modified, SIZE / 2);
    write(root, "assets/model.bin", modified);
    write(root, "README.md", "model, retrained\n");
    const first = await captureAndPublish(localCatalog(db, agent.scope), { dir: root, target });
    expect(first.outcome).toBe("appended");
    const [link] = first.manifest.patches;
    expect(link?.files).toEqual([
      { oid: git(root, ["hash-object", "assets/model.bin"]).trim(), digest: sha256(modified), size: SIZE },
    ]);
    // The patch itself holds the README's diff and the file's name and object ids only.
    expect(link?.size).toBeLessThan(2048);
    expect(first.uploaded.bytes).toBeGreaterThan(SIZE);

    // Changed again: the incremental link carries the new content whole too.
    const again = Buffer.from(modified);
    randomBytes(64).copy(again, 1000);
    write(root, "assets/model.bin", again);
    const second = await captureAndPublish(localCatalog(db, agent.scope), { dir: root, target });
    expect(second.outcome).toBe("appended");
    expect(second.manifest.patches.map((p) => p.kind)).toEqual(["full", "incremental"]);
    expect(second.manifest.patches[1]?.files?.map((f) => f.digest)).toEqual([sha256(again)]);

    for (const [captured, content] of [
      [first, modified],
      [second, again],
    ] as const) {
      const machine = temporaryDirectory("strata-machine-");
      const into = join(machine, "restored");
      const report = await restoreSnapshot(localRestorePort(db, agent.scope), {
        snapshotId: captured.snapshotId,
        into,
        stateDir: join(machine, "state"),
        exactOnly: true,
      });
      expect(report.result.status).toBe("restored");
      expect(git(into, ["write-tree"]).trim()).toBe(captured.manifest.tree);
      expect(sha256(readFileSync(join(into, "assets/model.bin")))).toBe(sha256(content));
      expect(readFileSync(join(into, "README.md"), "utf8")).toBe("model, retrained\n");
    }
  }, 180_000);

  it("counts a file larger than the threshold as whole even when it is text", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db);
    const text = "a line of text\n".repeat(Math.ceil((WHOLE_FILE_THRESHOLD_BYTES + 1) / 15));
    const root = initRepository({ "big.txt": text, "small.txt": "small\n" });
    addOrigin(root);
    write(root, "big.txt", `${text}one more line\n`);
    write(root, "small.txt", "small, changed\n");
    const target = {
      kind: "checkpoint" as const,
      key: {
        repository: { identity: `example.invalid/${uniqueName("text")}` },
        backendKind: "local",
        baseImage: "test-image",
        workContextId: uniqueName("wc"),
      },
    };
    const captured = await captureAndPublish(localCatalog(db, agent.scope), { dir: root, target });
    expect(captured.manifest.patches[0]?.files?.map((f) => f.oid)).toEqual([
      git(root, ["hash-object", "big.txt"]).trim(),
    ]);
    const machine = temporaryDirectory("strata-machine-");
    const report = await restoreSnapshot(localRestorePort(db, agent.scope), {
      snapshotId: captured.snapshotId,
      into: join(machine, "restored"),
      stateDir: join(machine, "state"),
      exactOnly: true,
    });
    expect(report.result.status).toBe("restored");
    expect(git(join(machine, "restored"), ["write-tree"]).trim()).toBe(captured.manifest.tree);
  }, 120_000);
});
