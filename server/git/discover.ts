// Finding the repository of a directory without starting git, for the common layouts: a
// `.git` directory, or a `.git` file pointing at one (linked worktrees, submodules). Anything
// unusual (core.worktree, a bare repository, a mount point on the way up, a directory inside
// .git) returns null, and the caller asks `git rev-parse`, which is always right.
import { lstat, readFile, realpath, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import type { RepositoryLayout } from "./commands.ts";

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (st) => st.isDirectory(),
    () => false,
  );
}

async function readGitFile(path: string, base: string): Promise<string | null> {
  const text = await readFile(path, "utf8").catch(() => null);
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
  const device = (await stat(start)).dev;
  for (let dir = start; ; dir = dirname(dir)) {
    // Inside a git directory git answers differently (no working tree): let it.
    if (basename(dir) === ".git") return null;
    if ((await stat(dir)).dev !== device) return null;
    const dotGit = join(dir, ".git");
    const entry = await lstat(dotGit).catch(() => null);
    if (entry) {
      let gitDir: string | null = null;
      if (entry.isDirectory()) gitDir = dotGit;
      else if (entry.isFile()) gitDir = await readGitFile(dotGit, dir);
      if (!gitDir) return null;
      gitDir = await realpath(gitDir).catch(() => null);
      if (!gitDir) return null;
      const pointer = await readFile(join(gitDir, "commondir"), "utf8").catch(() => null);
      const commonDir = pointer === null ? gitDir : resolve(gitDir, pointer.trim());
      const valid =
        (await stat(join(gitDir, "HEAD")).then(
          (st) => st.isFile(),
          () => false,
        )) &&
        (await isDirectory(join(commonDir, "objects"))) &&
        (await isDirectory(join(commonDir, "refs")));
      if (!valid) return null;
      const config = readConfig(await readFile(join(commonDir, "config"), "utf8").catch(() => ""));
      if (!config) return null;
      return { root: dir, gitDir, commonDir: await realpath(commonDir), objectFormat: config.objectFormat };
    }
    if (dirname(dir) === dir) return null;
  }
}
