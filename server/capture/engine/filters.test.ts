import { afterAll, describe, expect, it } from "vitest";
import { environmentDigest } from "./env-hash.ts";
import { filterDriversNamed, recordedFilters } from "./filters.ts";
import { removeTemporaryDirectories, temporaryDirectory, write } from "../../testing/repos.ts";

afterAll(removeTemporaryDirectories);

describe("filters", () => {
  it("finds the drivers .gitattributes names", () => {
    const text = "# comment\n*.psd filter=lfs diff=lfs merge=lfs -text\n*.c filter=indent\n*.txt text eol=lf\n";
    expect(filterDriversNamed(text)).toEqual(["indent", "lfs"]);
  });

  it("records line-ending settings and whether this machine configures each driver", () => {
    const filters = recordedFilters(
      [
        ["core.autocrlf", "input"],
        ["core.autocrlf", "true"],
        ["filter.lfs.clean", "git-lfs clean -- %f"],
        ["filter.lfs.required", "true"],
        ["remote.origin.url", "x"],
      ],
      ["*.bin filter=lfs\n", "*.c filter=indent\n"],
    );
    expect(filters).toEqual({
      autocrlf: "true",
      eol: null,
      drivers: [
        { name: "indent", configured: false, required: false },
        { name: "lfs", configured: true, required: true },
      ],
    });
  });
});

describe("envHash", () => {
  it("digests the lockfiles and toolchain files at the root, and only those", async () => {
    const root = temporaryDirectory();
    expect(await environmentDigest(root)).toEqual({ envHash: null, envFiles: [] });
    write(root, "package-lock.json", '{"lockfileVersion":3}\n');
    write(root, ".nvmrc", "20\n");
    write(root, ".devcontainer/devcontainer.json", "{}\n");
    write(root, "src/package-lock.json", "not at the root\n");
    const first = await environmentDigest(root);
    expect(first.envFiles).toEqual([".devcontainer/devcontainer.json", ".nvmrc", "package-lock.json"]);
    expect(first.envHash).toMatch(/^[0-9a-f]{64}$/);
    write(root, "src/package-lock.json", "changed, still not at the root\n");
    expect((await environmentDigest(root)).envHash).toBe(first.envHash);
    write(root, ".nvmrc", "22\n");
    expect((await environmentDigest(root)).envHash).not.toBe(first.envHash);
  });
});
