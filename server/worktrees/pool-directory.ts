// Where the pool is, and whether a checkout is one of its worktrees: path tests only, so a
// capture of any other checkout loads nothing of the pool (cli/commands/capture.ts).
import { realpath } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";

/** Where Strata keeps its pool: under the data directory (STRATA_DATA_DIR). */
export function poolDirectory(dataDir: string): string {
  return join(dataDir, "worktrees");
}

/**
 * The worktree's name when `root` (a checkout's top directory, a real path) is a child of the
 * pool directory. The pool directory's real path is asked only when the parent's name is the
 * pool directory's.
 */
export async function pooledWorktreeName(root: string, poolDir: string): Promise<string | null> {
  const parent = dirname(root);
  const name = basename(root);
  if (basename(parent) !== basename(poolDir) || name.startsWith(".")) return null;
  if (parent === resolve(poolDir)) return name;
  return parent === (await realpath(poolDir).catch(() => null)) ? name : null;
}
