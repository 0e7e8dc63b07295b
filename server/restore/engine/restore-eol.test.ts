import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { memoryBlobSource } from "./restore-blobs.ts";
import { parseConvertedLineEndings } from "./restore-eol.ts";
import { restoreWorktree } from "./restore.ts";
import { captureInto } from "../../testing/checkouts.ts";
import { initRepository, removeTemporaryDirectories, temporaryDirectory } from "../../testing/repos.ts";

afterAll(removeTemporaryDirectories);

describe("files this host's line-ending settings convert", () => {
  it("are the ones whose worktree line endings differ from the index's, binary and eol= files left out", () => {
    const out = [
      "i/lf    w/lf    attr/                 \tsame.txt",
      "i/lf    w/crlf  attr/                 \tdir/con verted.txt",
      "i/-text w/-text attr/                 \tb.bin",
      "i/lf    w/crlf  attr/text eol=crlf    \trepo.crlf",
      "i/      w/      attr/                 \tempty",
      "",
    ].join("\u0000");
    expect(parseConvertedLineEndings(out)).toEqual(["dir/con verted.txt"]);
  });

  it("are named in the filters warning of a restore on a host with core.autocrlf=true", async () => {
    const root = initRepository({
      ".gitattributes": "*.crlf eol=crlf\n",
      "a.txt": "one\ntwo\n",
      "b.bin": Buffer.from([0, 1, 2, 10]),
      "c.crlf": "kept by the repository's attributes\n",
    });
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    const config = join(temporaryDirectory(), "gitconfig");
    writeFileSync(config, "[core]\n\tautocrlf = true\n");
    const dir = temporaryDirectory("strata-machine-");
    const into = join(dir, "restored");
    const { result } = await restoreWorktree({ snapshotId: "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d", manifest }, into, {
      blobs: memoryBlobSource(blobs),
      stateDir: join(dir, "state"),
      baseEnv: { ...process.env, GIT_CONFIG_GLOBAL: config },
    });
    expect(result.status).toBe("restored");
    expect(readFileSync(join(into, "a.txt"), "utf8")).toBe("one\r\ntwo\r\n");
    const filters = result.warnings.find((w) => w.kind === "filters");
    expect(filters?.message).toContain("core.autocrlf=true");
    expect(filters?.paths).toEqual([".gitattributes", "a.txt"]);

    // A host without such a setting gets no warning.
    const plain = await restoreWorktree(
      { snapshotId: "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d", manifest },
      join(dir, "plain"),
      {
        blobs: memoryBlobSource(blobs),
        stateDir: join(dir, "state"),
        baseEnv: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" },
      },
    );
    expect(plain.result.warnings.map((w) => w.kind)).not.toContain("filters");
  });
});
