// .strata/snapshot-ignore: gitignore syntax, matched exactly as git matches a .gitignore at the
// root. Rather than re-implementing the rules, git evaluates the file alone, in a scratch
// repository with an empty working tree, so no .gitignore of the checkout takes part.
import { mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ignoredPaths, initScratchRepository } from "../../git/commands.ts";
import type { GitRunner } from "../../git/runner.ts";

const SNAPSHOT_IGNORE_FILE = ".strata/snapshot-ignore";

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Which of `paths` the checkout's snapshot-ignore file matches (empty when it has none). */
export async function snapshotIgnoredPaths(
  git: GitRunner,
  root: string,
  cacheDir: string,
  ignoreCase: boolean,
  paths: readonly string[],
): Promise<Set<string>> {
  const file = join(root, SNAPSHOT_IGNORE_FILE);
  if (paths.length === 0 || !(await exists(file))) return new Set();
  const scratchGitDir = join(cacheDir, "scratch.git");
  const emptyWorkTree = join(cacheDir, "empty");
  if (!(await exists(join(scratchGitDir, "HEAD")))) await git.run(initScratchRepository(scratchGitDir));
  await mkdir(emptyWorkTree, { recursive: true });
  // Paths are relative to the empty working tree, so git runs there.
  const scratch = git.at(emptyWorkTree);
  return scratch.run(ignoredPaths(paths, { patternFile: { file, scratchGitDir, emptyWorkTree, ignoreCase } }));
}
