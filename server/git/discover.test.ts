import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repositoryLayout } from "./commands.ts";
import { discoverRepository } from "./discover.ts";
import { createGitRunner } from "./runner.ts";
import {
  commitAll,
  git,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../testing/repos.ts";

afterAll(removeTemporaryDirectories);

async function revParse(dir: string) {
  return createGitRunner({ cwd: dir }).run(repositoryLayout());
}

describe("finding the repository without starting git", () => {
  it("agrees with git rev-parse for a checkout, a subdirectory and a linked worktree", async () => {
    const root = initRepository();
    write(root, "deep/er/file.txt", "x\n");
    const worktree = join(temporaryDirectory(), "wt");
    git(root, ["worktree", "add", "--quiet", worktree]);
    const library = initRepository();
    git(root, ["-c", "protocol.file.allow=always", "submodule", "add", "--quiet", `file://${library}`, "lib"]);
    commitAll(root, "submodule");
    for (const dir of [root, join(root, "deep", "er"), worktree]) {
      expect(await discoverRepository(dir)).toEqual(await revParse(dir));
    }
    // A submodule's git directory sets core.worktree: git itself is asked.
    expect(await discoverRepository(join(root, "lib"))).toBeNull();
  });

  it("leaves unusual layouts to git", async () => {
    const root = initRepository();
    expect(await discoverRepository(join(root, ".git"))).toBeNull();
    git(root, ["config", "core.worktree", root]);
    expect(await discoverRepository(root)).toBeNull();
    expect(await discoverRepository(temporaryDirectory())).toBeNull();
  });
});
