// Submodules: a capture records only the commit each one has checked out (as `git add` does)
// and never looks further; what is inside is reported, not captured. Each submodule gets a
// bounded time to be checked, so one slow or broken submodule cannot hold a capture up.
import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { OmittedEntry } from "../../domain/capture-manifest.ts";
import { isStrataError } from "../../domain/errors.ts";
import { gitmodulesPaths, remoteRefsContaining } from "../../git/commands.ts";
import type { GitRunner } from "../../git/runner.ts";
import { statusCommand } from "../../git/status.ts";

export const SUBMODULE_CHECK_MS = 10_000;

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function checkSubmodule(git: GitRunner, root: string, path: string, budgetMs: number): Promise<OmittedEntry[]> {
  const deadline = Date.now() + budgetMs;
  const remaining = () => Math.max(1, deadline - Date.now());
  const sub = git.at(join(root, path));
  try {
    const status = await sub.run({
      ...statusCommand({ untracked: "normal", ignored: false, ignoreSubmodules: "dirty" }),
      timeoutMs: remaining(),
    });
    const found: OmittedEntry[] = [];
    if (status.entries.length > 0) {
      found.push({
        path,
        reason: "submodule-changes",
        detail: `${status.entries.length} changed or untracked paths inside`,
      });
    }
    if (status.head) {
      const pushed = await sub.run({ ...remoteRefsContaining(status.head), timeoutMs: remaining() });
      if (!pushed) found.push({ path, reason: "unpushed-submodule-commit", detail: status.head });
    }
    return found;
  } catch (error) {
    const why = isStrataError(error, "TIMEOUT")
      ? `not checked within ${budgetMs} ms`
      : `could not be checked: ${(error as Error).message.slice(0, 200)}`;
    if (isStrataError(error, "ABORTED")) throw error;
    return [{ path, reason: "submodule-unchecked", detail: why }];
  }
}

/** What the checked-out submodules hold that the capture leaves out. */
export async function submoduleOmissions(
  git: GitRunner,
  root: string,
  budgetMs = SUBMODULE_CHECK_MS,
): Promise<OmittedEntry[]> {
  if (!(await exists(join(root, ".gitmodules")))) return [];
  const paths = await git.run(gitmodulesPaths());
  const checkedOut = [];
  for (const path of paths) {
    // .gitmodules is content of the checkout: never follow it outside the working tree.
    if (path.startsWith("/") || path.split("/").includes("..")) continue;
    if (await exists(join(root, path, ".git"))) checkedOut.push(path);
  }
  const results = await Promise.all(checkedOut.map((path) => checkSubmodule(git, root, path, budgetMs)));
  return results.flat();
}
