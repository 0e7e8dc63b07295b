// Whether a pooled worktree holds anything that would be lost with it, or that must not reach
// another task. A worktree is clean when it is exactly the snapshot its record remembers (HEAD
// the recorded commit, every file the recorded tree's, no file a capture would add or leave out:
// no untracked file, no denied one) and no file git ignores is a secret (an ignored `.env`).
// Ignored dependencies and build output (node_modules, target, .venv) do not count: reuse keeps
// them, removal drops them. A record written before reuse remembers no snapshot; such a worktree
// is judged by `git status` (nothing changed, nothing untracked) and the same secret rule.
//
// A directory that is not a checkout of its own is never judged clean (git would otherwise answer
// for a repository above it), and a worktree whose reset was interrupted is `marked`.
import { lstat, readdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { isStrataError } from "../domain/errors.ts";
import { deniedPathRule } from "../domain/deny-list.ts";
import { discoverRepository } from "../git/discover.ts";
import { createGitRunner, splitNul, type GitCommand, type GitRunner } from "../git/runner.ts";
import { statusCommand } from "../git/status.ts";
import { compareWorktree } from "../restore/engine/worktree-drift.ts";
import { isErrno } from "./pool-files.ts";
import type { RecordedSnapshot } from "./pool.ts";

/**
 * - `clean`: exactly its recorded snapshot (or, without one, an empty `git status`), no ignored secret;
 * - `dirty`: anything else a checkout holds (`detail` says what);
 * - `marked`: a reset to another snapshot began and never finished: its files are neither;
 * - `empty`: an empty directory (a restore never filled it);
 * - `missing`: no directory;
 * - `not-a-checkout`: something else, kept since nothing says it can go.
 */
type WorktreeCleanliness = "clean" | "dirty" | "marked" | "empty" | "missing" | "not-a-checkout";

export interface CleanlinessJudgement {
  state: WorktreeCleanliness;
  /** What makes a dirty worktree dirty, in a phrase. */
  detail: string | null;
}

/** Written before a reset changes a file, removed once the reset verified (reuse-worktree.ts). */
export function resetMarkFile(path: string): string {
  return join(path, ".git", "strata-reset-in-progress");
}

export async function isMarked(path: string): Promise<boolean> {
  return lstat(resetMarkFile(path)).then(
    () => true,
    () => false,
  );
}

/** Files and whole directories git ignores (an ignored directory is listed once, never entered). */
function ignoredEntries(): GitCommand<string[]> {
  return {
    args: ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--no-empty-directory"],
    parse: (out) => splitNul(out.stdout),
  };
}

const LISTED = 3;

function some(paths: readonly string[]): string {
  const shown = paths.slice(0, LISTED).join(", ");
  return paths.length > LISTED ? `${shown} and ${paths.length - LISTED} more` : shown;
}

/** What the worktree holds that its snapshot did not record, or null when nothing. */
async function unrecorded(git: GitRunner, path: string, recorded: RecordedSnapshot | null): Promise<string | null> {
  if (recorded === null) {
    const status = await git.run(statusCommand({ untracked: "normal", ignored: false, ignoreSubmodules: "none" }));
    const paths = [...status.entries.map((e) => e.path), ...status.unreadable];
    return paths.length > 0 ? `changes or untracked files (${some(paths)})` : null;
  }
  const found = await compareWorktree(path, recorded);
  if (!found.treeAvailable) return `its repository lacks the recorded tree ${recorded.tree}`;
  if (found.headMoved)
    return `HEAD moved from ${recorded.head ?? "an unborn branch"} to ${found.head.current ?? "none"}`;
  if (found.drifted.length > 0)
    return `changes since snapshot ${recorded.id} (${some(found.drifted.map((d) => d.path))})`;
  if (found.leftOut.length > 0) return `files a capture leaves out (${some(found.leftOut.map((o) => o.path))})`;
  return null;
}

export async function judgeCleanliness(path: string, recorded: RecordedSnapshot | null): Promise<CleanlinessJudgement> {
  let entries: string[];
  try {
    if (!(await lstat(path)).isDirectory()) return { state: "not-a-checkout", detail: null };
    entries = await readdir(path);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return { state: "missing", detail: null };
    throw error;
  }
  if (entries.length === 0) return { state: "empty", detail: null };
  // Its own repository, not one above it that git would otherwise answer for.
  const real = await realpath(path);
  if (!entries.includes(".git") || (await discoverRepository(real))?.root !== real) {
    return { state: "not-a-checkout", detail: null };
  }
  if (await isMarked(path)) return { state: "marked", detail: "a reset to another snapshot was interrupted" };
  try {
    const git = createGitRunner({ cwd: real });
    const changes = await unrecorded(git, real, recorded);
    if (changes !== null) return { state: "dirty", detail: changes };
    const secrets = (await git.run(ignoredEntries())).filter((p) => deniedPathRule(p) !== null);
    if (secrets.length > 0) return { state: "dirty", detail: `ignored secrets (${some(secrets)})` };
    return { state: "clean", detail: null };
  } catch (error) {
    if (isStrataError(error, "GIT_FAILED") || isStrataError(error, "NOT_A_REPOSITORY")) {
      return { state: "not-a-checkout", detail: null };
    }
    if (isStrataError(error, "UNREADABLE_PATH")) return { state: "dirty", detail: error.message };
    throw error;
  }
}
