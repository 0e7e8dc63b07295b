// Git LFS pointers, without running git.
import { describe, expect, it } from "vitest";
import { blobSizes, lfsObjectPath, parseLfsPointer } from "./lfs.ts";

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

  it("reads blob sizes", () => {
    const sizes = blobSizes([OID.slice(0, 40), TREE]);
    expect(sizes.parse(output(`${OID.slice(0, 40)} blob 130\n${TREE} tree 33\n`))).toEqual(
      new Map([[OID.slice(0, 40), 130]]),
    );
  });
});
