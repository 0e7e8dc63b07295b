// Git LFS fixtures (test support): real git-lfs, nothing mocked. A checkout whose `*.bin` files
// git-lfs manages, with a bare `origin` reached by a file:// URL: git-lfs serves such a remote's
// LFS store (<bare>/lfs/objects) with its own file transfer, so a push uploads the objects there
// and a restore downloads them from there, with no server and no network.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { addOrigin, git, temporaryDirectory, write } from "./repos.ts";

/** Fails with the way to fix it when git-lfs is missing: these tests never skip. */
export function requireGitLfs(): void {
  try {
    execFileSync("git", ["lfs", "version"], { stdio: "pipe" });
  } catch {
    throw new Error("git-lfs is not installed; the Git LFS tests need it: apt-get install -y git-lfs (.ci/run does).");
  }
}

/** The LFS oid of some content: its sha256. */
export function lfsOid(content: string | Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

export const LFS_ATTRIBUTES = "*.bin filter=lfs diff=lfs merge=lfs -text\n";

export interface LfsCheckout {
  root: string;
  /** The bare `origin`, which is also its LFS remote. */
  origin: string;
}

/**
 * A checkout (git-lfs installed in it alone: filter and hooks) with `files` committed, `*.bin`
 * through LFS, pushed to `origin` with their LFS objects. `before` runs before origin is added
 * (to record other remotes first).
 */
export function lfsCheckout(files: Record<string, string | Buffer>, before?: (root: string) => void): LfsCheckout {
  requireGitLfs();
  const root = temporaryDirectory("strata-lfs-");
  git(root, ["init", "--quiet", "--initial-branch=main"]);
  git(root, ["lfs", "install", "--local"]);
  write(root, ".gitattributes", LFS_ATTRIBUTES);
  for (const [path, content] of Object.entries(files)) write(root, path, content);
  git(root, ["add", "-A"]);
  git(root, ["commit", "--quiet", "-m", "LFS files"]);
  before?.(root);
  return { root, origin: addOrigin(root) };
}
