// Fixture repositories for the git tests: real git in temporary directories, nothing mocked.
// Also the two checks every capture test makes: the user's repository is byte-identical
// before and after, and the recorded tree is what `git add -A && git write-tree` gives on a
// copy, minus what `omitted` lists.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import { BUNDLE_OMISSIONS, type CaptureManifest } from "../domain/capture-manifest.ts";

const IDENTITY = {
  GIT_AUTHOR_NAME: "Fixture Author",
  GIT_AUTHOR_EMAIL: "author@example.invalid",
  GIT_COMMITTER_NAME: "Fixture Author",
  GIT_COMMITTER_EMAIL: "author@example.invalid",
};

const created: string[] = [];

/** A new empty temporary directory, removed by `removeTemporaryDirectories`. */
export function temporaryDirectory(prefix = "strata-git-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

export function removeTemporaryDirectories(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function git(cwd: string, args: string[], input?: string | Buffer): string {
  return execFileSync("git", args, {
    cwd,
    input,
    env: { ...process.env, ...IDENTITY, GIT_TERMINAL_PROMPT: "0" },
    stdio: ["pipe", "pipe", "pipe"],
    maxBuffer: 64 * 1024 * 1024,
  }).toString();
}

export function write(root: string, path: string, content: string | Buffer, mode?: number): void {
  const full = join(root, path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, content);
  if (mode !== undefined) chmodSync(full, mode);
}

export function symlink(root: string, path: string, target: string): void {
  const full = join(root, path);
  mkdirSync(dirname(full), { recursive: true });
  symlinkSync(target, full);
}

export function remove(root: string, path: string): void {
  rmSync(join(root, path), { recursive: true, force: true });
}

/**
 * A git executable that logs the arguments of every start (one line each), so a test can see
 * which calls ran, or prove that none did.
 */
export function spyGit(): { gitPath: string; calls: () => string[] } {
  const dir = temporaryDirectory("strata-spy-");
  const log = join(dir, "calls.log");
  const path = join(dir, "git");
  writeFileSync(path, `#!/bin/sh\necho "$*" >> "${log}"\nexec git "$@"\n`);
  chmodSync(path, 0o755);
  return { gitPath: path, calls: () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : []) };
}

/** A repository with one commit on `main`. */
export function initRepository(files: Record<string, string | Buffer> = { "README.md": "hello\n" }): string {
  const root = temporaryDirectory();
  git(root, ["init", "--quiet", "--initial-branch=main"]);
  for (const [path, content] of Object.entries(files)) write(root, path, content);
  git(root, ["add", "-A"]);
  git(root, ["commit", "--quiet", "-m", "initial"]);
  return root;
}

/** A small checkout with one commit, an uncommitted change and an untracked file. */
export function dirtyRepository(label: string): string {
  const root = initRepository({ "README.md": `# ${label}\n`, "src/main.txt": "one\ntwo\n" });
  write(root, "src/main.txt", "one\ntwo\nthree (uncommitted)\n");
  write(root, "notes/untracked.txt", `untracked ${label}\n`);
  return root;
}

/** A bare repository as `origin` (a file:// URL), with main pushed and tracked. */
export function addOrigin(root: string, name = "origin"): string {
  const bare = temporaryDirectory("strata-remote-");
  git(bare, ["init", "--quiet", "--bare", "--initial-branch=main"]);
  git(root, ["remote", "add", name, `file://${bare}`]);
  git(root, ["push", "--quiet", "-u", name, "HEAD"]);
  return bare;
}

export function commitAll(root: string, message: string): string {
  git(root, ["add", "-A"]);
  git(root, ["commit", "--quiet", "--allow-empty", "-m", message]);
  return git(root, ["rev-parse", "HEAD"]).trim();
}

// --- "the user's repository was not touched" -------------------------------------------------------

function walk(dir: string, base: string, out: Map<string, string>, skip: (rel: string) => boolean): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    const rel = base ? `${base}/${entry.name}` : entry.name;
    if (skip(rel)) continue;
    if (entry.isDirectory()) walk(full, rel, out, skip);
    else if (entry.isSymbolicLink()) out.set(rel, `link:${readlinkText(full)}`);
    else out.set(rel, createHash("sha256").update(readFileSync(full)).digest("hex"));
  }
}

function readlinkText(path: string): string {
  return execFileSync("readlink", [path]).toString().trim();
}

export interface RepositoryImage {
  index: string;
  head: string;
  refs: Map<string, string>;
  packedRefs: string;
  files: Map<string, string>;
}

/**
 * Bytes of the user's index, HEAD, refs (all but Strata's own snapshot refs) and working-tree
 * files, to compare before and after a capture.
 */
export function imageOf(root: string): RepositoryImage {
  const gitDir = join(root, ".git");
  const hash = (path: string) =>
    existsSync(path) ? createHash("sha256").update(readFileSync(path)).digest("hex") : "missing";
  const refs = new Map<string, string>();
  walk(join(gitDir, "refs"), "refs", refs, (rel) => rel.startsWith("refs/strata"));
  const files = new Map<string, string>();
  walk(root, "", files, (rel) => rel === ".git" || rel.endsWith("/.git"));
  return {
    index: hash(join(gitDir, "index")),
    head: hash(join(gitDir, "HEAD")),
    refs,
    packedRefs: hash(join(gitDir, "packed-refs")),
    files,
  };
}

/**
 * Call before an operation that must not write a checkout (a verify, a resume in place); the
 * returned check asserts its files, index, HEAD, refs and status are as they were. Strata's own
 * capture cache under .git/strata is not the checkout's (a verify may refresh a capture's index
 * there, as git status refreshes .git/index).
 */
export function expectUntouched(root: string): () => void {
  const status = () => git(root, ["status", "--porcelain=v2", "--branch", "--untracked-files=all"]);
  const before = { image: imageOf(root), status: status() };
  return () => expect({ image: imageOf(root), status: status() }).toEqual(before);
}

// --- "the recorded tree is the working copy's" -----------------------------------------------------

/** Reasons that describe submodule contents or commits, not files of the tree. */
const INFORMATIONAL = new Set(["submodule-changes", "unpushed-submodule-commit", "submodule-unchecked"]);

/**
 * What the tree must be: `git add -A && git write-tree` on a copy of the checkout, with every
 * left-out path put back to HEAD's entry (or dropped when HEAD has none).
 */
export function expectedTree(root: string, manifest: CaptureManifest): string {
  const copy = join(temporaryDirectory("strata-copy-"), "checkout");
  cpSync(root, copy, { recursive: true, verbatimSymlinks: true });
  git(copy, ["add", "-A"]);
  const paths = manifest.omitted
    .filter((o) => !INFORMATIONAL.has(o.reason) && !BUNDLE_OMISSIONS.has(o.reason))
    .map((o) => o.path.replace(/\/$/, ""));
  if (paths.length > 0) {
    const hasHead = manifest.head !== null;
    const literal = ["--literal-pathspecs"];
    const list = ["--pathspec-from-file=-", "--pathspec-file-nul"];
    if (hasHead) git(copy, [...literal, "reset", "--quiet", ...list], paths.join("\0"));
    else git(copy, [...literal, "rm", "--cached", "--quiet", "-r", "--ignore-unmatch", ...list], paths.join("\0"));
  }
  return git(copy, ["write-tree"]).trim();
}

/** The tree the manifest's patch chain produces when applied to HEAD in a scratch index. */
export function treeFromPatches(root: string, manifest: CaptureManifest, artifacts: Map<string, Buffer>): string {
  const scratch = join(temporaryDirectory("strata-apply-"), "index");
  const env = { ...process.env, GIT_INDEX_FILE: scratch };
  const run = (args: string[], input?: Buffer) => execFileSync("git", args, { cwd: root, env, input }).toString();
  run(["read-tree", manifest.head ?? "--empty"]);
  for (const link of manifest.patches) {
    const bytes = artifacts.get(link.digest);
    if (!bytes) throw new Error(`patch ${link.digest} is not among the artifacts`);
    if (bytes.length > 0) run(["apply", "--cached", "--binary", "--whitespace=nowarn", "-"], bytes);
  }
  return run(["write-tree"]).trim();
}
