// Git LFS fixtures (test support): real git-lfs, nothing mocked. A checkout whose `*.bin` files
// git-lfs manages, with a bare `origin` reached by a file:// URL: git-lfs serves such a remote's
// LFS store (<bare>/lfs/objects) with its own file transfer, so a push uploads the objects there
// and a restore downloads them from there, with no server and no network. A remote that asks for
// credentials is a small HTTP server that answers every request with 401.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
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

/** Whether a repository's LFS store (bare, or a checkout's .git) holds an object. */
export function lfsStoreHas(repository: string, oid: string): boolean {
  const base = existsSync(join(repository, ".git")) ? join(repository, ".git") : repository;
  return existsSync(join(base, "lfs", "objects", oid.slice(0, 2), oid.slice(2, 4), oid));
}

/**
 * Commits files and pushes the commit without its LFS objects (`--no-verify` skips git-lfs's
 * pre-push hook), so the remote has the pointers and not the content.
 */
export function pushWithoutLfsObjects(root: string, files: Record<string, string | Buffer>): string {
  for (const [path, content] of Object.entries(files)) write(root, path, content);
  git(root, ["add", "-A"]);
  git(root, ["commit", "--quiet", "-m", "LFS files, objects not pushed"]);
  git(root, ["push", "--quiet", "--no-verify", "origin", "HEAD"]);
  return git(root, ["rev-parse", "HEAD"]).trim();
}

/** An HTTP server that asks for credentials on every request; close it after the test. */
export async function credentialsWall(): Promise<{
  url: string;
  requests: () => string[];
  close: () => Promise<void>;
}> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(401, { "WWW-Authenticate": 'Basic realm="strata-test"', "Content-Type": "text/plain" });
    res.end("credentials required\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/acme/app.git`,
    requests: () => [...requests],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
