// Git LFS pointers and the git-lfs calls a restore makes, without running git.
import { describe, expect, it } from "vitest";
import { StrataError } from "../domain/errors.ts";
import { blobSizes, lfsObjectPath, lfsVersion, parseLfsPointer } from "./lfs.ts";
import { BATCH_SSH_COMMAND, checkoutIndex, lfsFetch, lfsFilteredPaths, smudgeLfsFiles } from "./restore-commands.ts";
import { lfsRemoteUrl } from "../restore/engine/restore-lfs.ts";

const OID = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393";
const TREE = "b".repeat(40);

function output(stdout: string, exitCode = 0) {
  return { stdout: Buffer.from(stdout), stderr: "", exitCode };
}

describe("LFS pointers", () => {
  const pointer = `version https://git-lfs.github.com/spec/v1\noid sha256:${OID}\nsize 12345\n`;

  it("reads the oid and size of a pointer", () => {
    expect(parseLfsPointer(Buffer.from(pointer))).toEqual({ oid: OID, size: 12345 });
    const withExtension = pointer.replace("oid", `ext-0-foo sha256:${"c".repeat(64)}\noid`);
    expect(parseLfsPointer(Buffer.from(withExtension))).toEqual({ oid: OID, size: 12345 });
    const hawser = pointer.replace("git-lfs.github.com", "hawser.github.com");
    expect(parseLfsPointer(Buffer.from(hawser))).toEqual({ oid: OID, size: 12345 });
  });

  it("takes nothing else for one", () => {
    for (const text of [
      "",
      "hello\n",
      pointer.slice(0, -1),
      pointer.replace("size 12345", "size -1"),
      pointer.replace("size 12345", "size 012"),
      pointer.replace(`sha256:${OID}`, `sha256:${OID.toUpperCase()}`),
      pointer.replace(`sha256:${OID}`, "sha256:../../etc"),
      pointer.replace("version https://git-lfs.github.com/spec/v1", "version https://example.invalid/v1"),
      pointer.replace("size 12345\n", ""),
      `${pointer}extra line\n`,
      pointer + " ".repeat(1024),
    ]) {
      expect(parseLfsPointer(Buffer.from(text)), JSON.stringify(text)).toBeNull();
    }
  });

  it("places objects where git-lfs keeps them", () => {
    expect(lfsObjectPath("/r/.git", OID)).toBe(`/r/.git/lfs/objects/4d/7a/${OID}`);
  });

  it("reads blob sizes and whether git-lfs is installed", () => {
    const sizes = blobSizes([OID.slice(0, 40), TREE]);
    expect(sizes.parse(output(`${OID.slice(0, 40)} blob 130\n${TREE} tree 33\n`))).toEqual(
      new Map([[OID.slice(0, 40), 130]]),
    );
    expect(lfsVersion().parse(output("git-lfs/3.3.0 (GitHub; linux amd64; go 1.19.8)\n"))).toBe(
      "git-lfs/3.3.0 (GitHub; linux amd64; go 1.19.8)",
    );
    expect(lfsVersion().parse(output("", 1))).toBeNull();
  });
});

describe("git-lfs calls of a restore", () => {
  it("checks out LFS files as pointers, and smudges them once their objects are here", () => {
    expect(checkoutIndex("/r/.git/index").env).toMatchObject({ GIT_LFS_SKIP_SMUDGE: "1" });
    const smudge = smudgeLfsFiles("/r/.git/index", ["a.bin", "b c.bin"]);
    expect(smudge.args).toEqual(expect.arrayContaining(["checkout-index", "--force", "--stdin", "-z"]));
    expect(smudge.env).not.toHaveProperty("GIT_LFS_SKIP_SMUDGE");
    expect(smudge.input).toBe("a.bin\u0000b c.bin\u0000");
  });

  it("downloads from one remote without credential helpers, prompts or an interactive ssh", () => {
    const fetch = lfsFetch("file:///srv/app.git", TREE, { timeoutMs: 5000, sshCommand: BATCH_SSH_COMMAND });
    expect(fetch.args).toEqual(expect.arrayContaining(["core.hooksPath=/dev/null", "credential.helper="]));
    expect(fetch.args.slice(-6)).toEqual(["lfs", "fetch", "--include=", "--exclude=", "file:///srv/app.git", TREE]);
    expect(fetch.env).toEqual({ GIT_SSH_COMMAND: BATCH_SSH_COMMAND });
    expect(fetch.timeoutMs).toBe(5000);
    expect(fetch.okExitCodes).toEqual([0, 2]);
    expect(() => lfsFetch("-oProxyCommand=x", TREE, { timeoutMs: 1, sshCommand: null })).toThrow(StrataError);
    expect(() => lfsFetch("file:///a", "--all", { timeoutMs: 1, sshCommand: null })).toThrow(StrataError);
  });

  it("reads which paths the lfs filter applies to", () => {
    const check = lfsFilteredPaths("/r/.git/index", ["a.bin", "b.txt"]);
    expect(check.args).toEqual(expect.arrayContaining(["check-attr", "--cached", "-z", "--stdin", "filter"]));
    const out = "a.bin\u0000filter\u0000lfs\u0000b.txt\u0000filter\u0000unspecified\u0000";
    expect(check.parse(output(out))).toEqual(new Set(["a.bin"]));
  });

  it("hands git-lfs a local remote as a file URL", () => {
    expect(lfsRemoteUrl("/srv/git/app repo.git")).toBe("file:///srv/git/app%20repo.git");
    expect(lfsRemoteUrl("https://example.invalid/a.git")).toBe("https://example.invalid/a.git");
    expect(lfsRemoteUrl("git@example.invalid:a.git")).toBe("git@example.invalid:a.git");
  });
});
