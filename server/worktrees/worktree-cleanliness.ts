// Whether a pooled worktree holds anything that would be lost with it. For now "dirty" is what
// `git status --porcelain` shows (changes, untracked files); reuse will sharpen it to "not what
// its last snapshot recorded". A directory that is not a checkout of its own is never judged
// clean: git would otherwise answer for a repository above it.
import { lstat, readdir } from "node:fs/promises";
import { isStrataError } from "../domain/errors.ts";
import { createGitRunner } from "../git/runner.ts";
import { statusCommand } from "../git/status.ts";
import { isErrno } from "./pool-files.ts";

/**
 * - `clean`: a checkout whose status is empty;
 * - `dirty`: changes or untracked files (or directories git could not read);
 * - `empty`: an empty directory (a restore never filled it);
 * - `missing`: no directory;
 * - `not-a-checkout`: something else, kept since nothing says it can go.
 */
export type WorktreeCleanliness = "clean" | "dirty" | "empty" | "missing" | "not-a-checkout";

export async function worktreeCleanliness(path: string): Promise<WorktreeCleanliness> {
  let entries: string[];
  try {
    if (!(await lstat(path)).isDirectory()) return "not-a-checkout";
    entries = await readdir(path);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return "missing";
    throw error;
  }
  if (entries.length === 0) return "empty";
  if (!entries.includes(".git")) return "not-a-checkout";
  try {
    const status = await createGitRunner({ cwd: path }).run(
      statusCommand({ untracked: "normal", ignored: false, ignoreSubmodules: "none" }),
    );
    return status.entries.length > 0 || status.unreadable.length > 0 ? "dirty" : "clean";
  } catch (error) {
    if (isStrataError(error, "GIT_FAILED") || isStrataError(error, "NOT_A_REPOSITORY")) return "not-a-checkout";
    throw error;
  }
}
