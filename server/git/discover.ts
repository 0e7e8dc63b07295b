// Finding the repository of a directory without starting git, for the common layouts: a
// `.git` directory, or a `.git` file pointing at one (linked worktrees, submodules). Anything
// unusual (core.worktree, a bare repository, a mount point on the way up, a directory inside
// .git) returns null, and the caller asks `git rev-parse`, which is always right.
//
// The dozen small reads are synchronous: each costs microseconds, far less than the thread-pool
// round trip of its asynchronous form, and this runs at the start of every capture.
import { lstatSync, readFileSync, realpathSync, statSync } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { isStrataError, StrataError } from "../domain/errors.ts";
import type { RepositoryLayout } from "./commands.ts";
import { unreadablePath } from "./runner.ts";

/**
 * The real path of the directory a capture or a verify starts from: NOT_A_REPOSITORY when it
 * does not exist or is not a directory, UNREADABLE_PATH when it cannot be read.
 */
export async function resolveCheckoutDirectory(dir: string): Promise<string> {
  try {
    const real = await realpath(dir);
    if (!(await stat(real)).isDirectory()) {
      throw new StrataError("NOT_A_REPOSITORY", `${JSON.stringify(dir)} is not a directory.`);
    }
    return real;
  } catch (error) {
    if (isStrataError(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new StrataError("NOT_A_REPOSITORY", `${JSON.stringify(dir)} does not exist.`, { cause: error });
    }
    throw unreadablePath(dir, code === "ELOOP" ? "a symbolic link loops" : (error as Error).message);
  }
}

function isDirectory(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

function isFile(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

function realPath(path: string): string | null {
  try {
    return realpathSync.native(path);
  } catch {
    return null;
  }
}

function readGitFile(path: string, base: string): string | null {
  const text = readText(path);
  const match = text ? /^gitdir: (.+?)\r?\n?$/.exec(text) : null;
  if (!match?.[1]) return null;
  return isAbsolute(match[1]) ? match[1] : resolve(base, match[1]);
}

/** What config says that discovery must respect; null when rev-parse should decide. */
function readConfig(text: string): { objectFormat: "sha1" | "sha256" } | null {
  if (/^\s*worktree\s*=/im.test(text) || /^\s*bare\s*=\s*(true|yes|on|1)\s*$/im.test(text)) return null;
  if (/^\s*worktreeconfig\s*=\s*(true|yes|on|1)\s*$/im.test(text)) return null;
  const format = /^\s*objectformat\s*=\s*(\S+)\s*$/im.exec(text)?.[1]?.toLowerCase();
  if (format && format !== "sha1" && format !== "sha256") return null;
  return { objectFormat: format === "sha256" ? "sha256" : "sha1" };
}

export async function discoverRepository(start: string): Promise<RepositoryLayout | null> {
  return discover(start);
}

function discover(start: string): RepositoryLayout | null {
  const device = statSync(start).dev;
  for (let dir = start; ; dir = dirname(dir)) {
    // Inside a git directory git answers differently (no working tree): let it.
    if (basename(dir) === ".git") return null;
    if (statSync(dir).dev !== device) return null;
    const dotGit = join(dir, ".git");
    const entry = lstatSync(dotGit, { throwIfNoEntry: false });
    if (entry) {
      let gitDir: string | null = null;
      if (entry.isDirectory()) gitDir = dotGit;
      else if (entry.isFile()) gitDir = readGitFile(dotGit, dir);
      if (!gitDir) return null;
      gitDir = realPath(gitDir);
      if (!gitDir) return null;
      const pointer = readText(join(gitDir, "commondir"));
      const commonDir = pointer === null ? gitDir : resolve(gitDir, pointer.trim());
      const valid =
        isFile(join(gitDir, "HEAD")) && isDirectory(join(commonDir, "objects")) && isDirectory(join(commonDir, "refs"));
      if (!valid) return null;
      const config = readConfig(readText(join(commonDir, "config")) ?? "");
      if (!config) return null;
      const realCommonDir = realPath(commonDir);
      if (!realCommonDir) return null;
      return { root: dir, gitDir, commonDir: realCommonDir, objectFormat: config.objectFormat };
    }
    if (dirname(dir) === dir) return null;
  }
}
