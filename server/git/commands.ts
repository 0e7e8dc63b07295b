// Git calls as plain data: each function builds the arguments of one call and says how to read
// its answer. Nothing here runs git, so every builder and parser is unit-tested on its own.
import { splitByBudget } from "../domain/content.ts";
import { StrataError } from "../domain/errors.ts";
import {
  decodeUtf8,
  nulInput,
  pathArgs,
  refArg,
  splitLines,
  splitNul,
  type GitCommand,
  type GitOutput,
} from "./runner.ts";

const OBJECT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

export function isObjectId(value: string): boolean {
  return OBJECT_ID.test(value);
}

/** An object id we are about to pass as an argument: checked, so it can never be an option. */
export function oidArg(value: string): string {
  if (!OBJECT_ID.test(value)) throw new StrataError("INVALID_INPUT", "Refusing a malformed object id.");
  return value;
}

function oneObjectId(subcommand: string) {
  return (out: GitOutput): string => {
    const value = decodeUtf8(out.stdout).trim();
    if (!OBJECT_ID.test(value)) {
      throw new StrataError("GIT_FAILED", `git ${subcommand} did not print an object id.`, { data: { subcommand } });
    }
    return value;
  };
}

// --- the repository ----------------------------------------------------------------------------

export interface RepositoryLayout {
  /** The working tree's top directory. */
  root: string;
  /** This worktree's git directory (differs from commonDir in a linked worktree). */
  gitDir: string;
  /** The directory that holds objects, refs and config. */
  commonDir: string;
  objectFormat: "sha1" | "sha256";
}

export function repositoryLayout(): GitCommand<RepositoryLayout> {
  return {
    args: [
      "rev-parse",
      "--path-format=absolute",
      "--show-toplevel",
      "--absolute-git-dir",
      "--git-common-dir",
      "--show-object-format",
    ],
    parse: (out) => {
      const [root, gitDir, commonDir, format] = splitLines(out.stdout);
      if (!root || !gitDir || !commonDir) {
        throw new StrataError("NOT_A_REPOSITORY", "git did not name a working tree for this directory.");
      }
      return { root, gitDir, commonDir, objectFormat: format === "sha256" ? "sha256" : "sha1" };
    },
  };
}

/** A commit a revision names, or null when it names none. */
export function resolveCommit(revision: string): GitCommand<string | null> {
  return {
    args: ["rev-parse", "--verify", "--quiet", "--end-of-options", `${refArg(revision, "revision")}^{commit}`],
    okExitCodes: [0, 1, 128],
    parse: (out) => (out.exitCode === 0 ? oneObjectId("rev-parse")(out) : null),
  };
}

/** The id of the empty tree in this repository's hash (nothing is written). */
export function emptyTree(): GitCommand<string> {
  return { args: ["hash-object", "-t", "tree", "--stdin"], input: "", parse: oneObjectId("hash-object") };
}

/** Which of these objects exist (one `cat-file` for all of them). */
export function existingObjects(oids: readonly string[]): GitCommand<Set<string>> {
  return {
    args: ["cat-file", "--batch-check=%(objectname)"],
    input: oids.map((o) => `${oidArg(o)}\n`).join(""),
    parse: (out) => new Set(splitLines(out.stdout).filter((line) => OBJECT_ID.test(line))),
  };
}

// --- configuration -----------------------------------------------------------------------------

/** Configuration values whose keys match a fixed pattern, as [key, value] pairs in file order. */
export function configMatching(pattern: string): GitCommand<Array<[string, string]>> {
  return {
    args: ["config", "-z", "--get-regexp", pattern],
    // 1: no key matched.
    okExitCodes: [0, 1],
    parse: (out) =>
      splitNul(out.stdout).map((record) => {
        const newline = record.indexOf("\n");
        return newline < 0 ? [record, ""] : [record.slice(0, newline), record.slice(newline + 1)];
      }),
  };
}

// --- the private index -------------------------------------------------------------------------

function onIndex(indexFile: string): Record<string, string> {
  // Our own index may be refreshed and rewritten; the user's never is.
  return { GIT_INDEX_FILE: indexFile, GIT_OPTIONAL_LOCKS: "1" };
}
const PRIVATE_INDEX_CONFIG = ["-c", "core.splitIndex=false"];

/** Adds, updates or removes these paths in the index from the working tree (filters applied). */
export function updateIndexFromWorktree(indexFile: string, paths: readonly string[]): GitCommand<void> {
  return {
    args: [...PRIVATE_INDEX_CONFIG, "update-index", "--add", "--remove", "--replace", "-z", "--stdin"],
    env: onIndex(indexFile),
    input: nulInput(paths),
    parse: () => undefined,
  };
}

export interface IndexEntry {
  mode: string;
  oid: string;
  path: string;
}

/** Sets index entries directly; mode 0 removes a path (all of its stages). */
export function setIndexEntries(indexFile: string, entries: readonly IndexEntry[]): GitCommand<void> {
  return {
    args: [...PRIVATE_INDEX_CONFIG, "update-index", "-z", "--index-info"],
    env: onIndex(indexFile),
    input: nulInput(entries.map((e) => `${e.mode} ${oidArg(e.oid)}\t${e.path}`)),
    parse: () => undefined,
  };
}

/** Fills an index from a tree (or empties it with the empty tree). */
export function readTreeInto(indexFile: string, tree: string): GitCommand<void> {
  return {
    args: [...PRIVATE_INDEX_CONFIG, "read-tree", oidArg(tree)],
    env: onIndex(indexFile),
    parse: () => undefined,
  };
}

export function writeTree(indexFile: string): GitCommand<string> {
  return {
    // The trees a capture (or a restore) writes are stored uncompressed. They stay loose only until the next
    // `git gc` packs them (a pack compresses again), and deflating them took about a fifth of
    // write-tree's time after a change in many directories. Blobs keep git's compression.
    args: [...PRIVATE_INDEX_CONFIG, "-c", "core.looseCompression=0", "write-tree"],
    env: onIndex(indexFile),
    parse: oneObjectId("write-tree"),
  };
}

/** Entries of a tree at these paths (missing paths are simply absent). */
export function treeEntries(treeish: string, paths: readonly string[]): GitCommand<IndexEntry[]> {
  return {
    args: ["ls-tree", "-z", "--full-tree", oidArg(treeish), ...pathArgs(paths)],
    parse: (out) =>
      splitNul(out.stdout).map((record) => {
        const tab = record.indexOf("\t");
        const [mode = "", , oid = ""] = record.slice(0, tab).split(" ");
        return { mode, oid, path: record.slice(tab + 1) };
      }),
  };
}

// --- line endings the repository converts ------------------------------------------------------

/** Keeps an argument list well under the kernel's limit when paths are passed as arguments. */
const ARGUMENT_BYTES = 64 * 1024;

/** Splits paths into groups whose total length stays under ARGUMENT_BYTES. */
export function pathGroups(paths: readonly string[]): string[][] {
  return splitByBudget(paths, (path) => Buffer.byteLength(path) + 1, Infinity, ARGUMENT_BYTES);
}

/**
 * Paths whose blob in the index has a line that ends in CR: a CRLF line ending (or a CR at the
 * very end). Searched by git itself, in every blob of the index or in these paths only; binary
 * files count like any other (an explicit `text` attribute converts them too).
 */
export function pathsWithCarriageReturns(indexFile: string, paths: readonly string[] | null): GitCommand<string[]> {
  return {
    args: [
      "--literal-pathspecs",
      "grep",
      "--cached",
      "-l",
      "-z",
      "--full-name",
      "--no-color",
      "--no-textconv",
      "-G",
      "-e",
      // A carriage return (the byte itself) at the end of a line.
      "\r$",
      ...(paths ? pathArgs(paths) : []),
    ],
    env: { GIT_INDEX_FILE: indexFile },
    // 1: no line ends in CR.
    okExitCodes: [0, 1],
    parse: (out) => splitNul(out.stdout),
  };
}

/** The line-ending attributes of each path, read with the .gitattributes files the index holds. */
export function lineEndingAttributes(
  indexFile: string,
  paths: readonly string[],
): GitCommand<Map<string, Record<string, string>>> {
  return {
    args: ["check-attr", "--cached", "-z", "--stdin", "text", "eol", "crlf"],
    env: { GIT_INDEX_FILE: indexFile },
    input: nulInput(paths),
    parse: (out) => {
      const fields = splitNul(out.stdout);
      const attributes = new Map<string, Record<string, string>>();
      for (let i = 0; i + 2 < fields.length; i += 3) {
        const [path = "", name = "", value = ""] = fields.slice(i, i + 3);
        attributes.set(path, { ...attributes.get(path), [name]: value });
      }
      return attributes;
    },
  };
}

/** Every stage-0 file entry of an index (`ls-files -s`), by path. */
export function indexFileEntries(indexFile: string): GitCommand<Map<string, IndexEntry>> {
  return {
    args: ["ls-files", "-s", "-z"],
    env: { GIT_INDEX_FILE: indexFile },
    parse: (out) => {
      const entries = new Map<string, IndexEntry>();
      for (const record of splitNul(out.stdout)) {
        const tab = record.indexOf("\t");
        const [mode = "", oid = "", stage = ""] = record.slice(0, tab).split(" ");
        const path = record.slice(tab + 1);
        if (stage === "0") entries.set(path, { mode, oid, path });
      }
      return entries;
    },
  };
}

/** A file a tree comparison found added, changed or deleted (mode 0 and no oid when deleted). */
export interface ChangedFile {
  path: string;
  mode: string;
  oid: string | null;
}

/** The files that differ between two trees (no renames), with their entries in the second. */
export function changedFilesBetween(from: string, to: string): GitCommand<ChangedFile[]> {
  return {
    args: ["diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", oidArg(from), oidArg(to)],
    parse: (out) => parseRawDiff(splitNul(out.stdout)),
  };
}

export function parseRawDiff(records: readonly string[]): ChangedFile[] {
  const files: ChangedFile[] = [];
  for (let i = 0; i + 1 < records.length; i += 2) {
    const [, mode = "", , oid = "", status = ""] = (records[i] ?? "").split(" ");
    const path = records[i + 1] ?? "";
    const deleted = status.startsWith("D");
    files.push({ path, mode: deleted ? "000000" : mode, oid: deleted ? null : oid });
  }
  return files;
}

// --- ignore rules ------------------------------------------------------------------------------

export interface IgnoreCheckOptions {
  /** Evaluate only this pattern file, in a scratch repository (no .gitignore is read). */
  patternFile?: { file: string; scratchGitDir: string; emptyWorkTree: string; ignoreCase: boolean };
  /** Judge against this index (tracked paths are never ignored). */
  indexFile?: string;
}

/** Which of these paths the ignore rules exclude. */
export function ignoredPaths(paths: readonly string[], opts: IgnoreCheckOptions = {}): GitCommand<Set<string>> {
  const args: string[] = [];
  if (opts.patternFile) {
    const p = opts.patternFile;
    args.push(
      `--git-dir=${p.scratchGitDir}`,
      `--work-tree=${p.emptyWorkTree}`,
      "-c",
      `core.excludesFile=${p.file}`,
      "-c",
      `core.ignoreCase=${p.ignoreCase ? "true" : "false"}`,
    );
  }
  args.push("check-ignore", "-z", "--stdin");
  if (opts.patternFile) args.push("--no-index");
  return {
    args,
    env: opts.indexFile ? { GIT_INDEX_FILE: opts.indexFile } : undefined,
    input: nulInput(paths),
    // 1: none of them is ignored.
    okExitCodes: [0, 1],
    parse: (out) => new Set(splitNul(out.stdout)),
  };
}

export function initScratchRepository(gitDir: string): GitCommand<void> {
  return { args: ["init", "--quiet", "--bare", ...pathArgs([gitDir])], parse: () => undefined };
}

// --- history -----------------------------------------------------------------------------------

/** Commits reachable from HEAD and from no remote-tracking ref, newest first. */
export function unpushedCommits(): GitCommand<string[]> {
  return {
    args: ["rev-list", "HEAD", "--not", "--remotes"],
    parse: (out) => splitLines(out.stdout).filter((l) => OBJECT_ID.test(l)),
  };
}

/**
 * The paths each commit adds or changes. A merge lists only what differs from every parent
 * (content introduced by the merge itself); whatever it took from a parent is that parent's
 * own change, which is listed under the parent when the parent is unpushed too.
 */
export function pathsTouchedBy(commits: readonly string[]): GitCommand<Map<string, string[]>> {
  return {
    args: [
      "diff-tree",
      "--stdin",
      "-z",
      "-r",
      "--root",
      "-c",
      "--always",
      "--name-only",
      "--no-renames",
      "--diff-filter=d",
    ],
    input: commits.map((c) => `${oidArg(c)}\n`).join(""),
    parse: (out) => parseTouchedPaths(splitNul(out.stdout), commits),
  };
}

export function parseTouchedPaths(records: readonly string[], commits: readonly string[]): Map<string, string[]> {
  const touched = new Map<string, string[]>();
  let next = 0;
  let current: string[] | null = null;
  for (const record of records) {
    // --always prints every commit's id in input order, so the next header is known.
    if (record === commits[next]) {
      current = [];
      touched.set(record, current);
      next++;
    } else if (current) {
      current.push(record);
    }
  }
  return touched;
}

/** A bundle of HEAD's history that no remote-tracking ref has, written to stdout. */
export function unpushedBundle(maxBytes: number): GitCommand<Buffer> {
  return {
    args: ["bundle", "create", "--quiet", "-", "HEAD", "--not", "--remotes"],
    maxOutputBytes: maxBytes,
    parse: (out) => out.stdout,
  };
}

// --- patches -----------------------------------------------------------------------------------

/**
 * Files larger than this count as binary in a patch (git's core.bigFileThreshold), like the
 * files git finds binary by their content or attributes: the patch names each such file by its
 * object id ("Binary files … differ") and the capture stores its content whole, as a blob of
 * its own (patch-chain.ts). A binary delta of a large file costs seconds to compute (3.2 s for a
 * modified 30 MB file) and the delta of compressed or generated content is rarely small.
 */
export const WHOLE_FILE_THRESHOLD_BYTES = 1024 * 1024;

const PATCH_CONFIG = ["-c", `core.bigFileThreshold=${WHOLE_FILE_THRESHOLD_BYTES}`];

const PATCH_OPTIONS = [
  "-p",
  "--full-index",
  "--no-renames",
  "--no-ext-diff",
  "--no-textconv",
  "--src-prefix=a/",
  "--dst-prefix=b/",
  "--submodule=short",
];

/**
 * A patch from one tree (or commit) to another, applicable with `git apply` where the objects of
 * the files it carries whole (binary or large: wholeFilesInPatch) are present.
 */
export function treePatch(from: string, to: string, maxBytes: number): GitCommand<Buffer> {
  return {
    args: [...PATCH_CONFIG, "diff-tree", "-r", ...PATCH_OPTIONS, oidArg(from), oidArg(to)],
    maxOutputBytes: maxBytes,
    parse: (out) => out.stdout,
  };
}

/**
 * The same patch from a tree (or commit) to what an index holds, so it can be made while the
 * index's tree is still being written.
 */
export function indexPatch(indexFile: string, from: string, maxBytes: number): GitCommand<Buffer> {
  return {
    args: [...PATCH_CONFIG, "diff-index", "--cached", ...PATCH_OPTIONS, oidArg(from)],
    env: { GIT_INDEX_FILE: indexFile },
    maxOutputBytes: maxBytes,
    parse: (out) => out.stdout,
  };
}

const EMPTY_OID = /^0+$/;

/**
 * The object ids of the files a patch carries whole: each section that says "Binary files …
 * differ" after its full index line, unless the file is deleted (its new id is all zeros). Only a
 * section's header is read: every line of a text hunk starts with ' ', '+', '-' or '\\'.
 */
export function wholeFilesInPatch(patch: Buffer): string[] {
  const oids = new Set<string>();
  let inHeader = false;
  let newOid: string | null = null;
  let at = 0;
  while (at < patch.length) {
    const end = patch.indexOf(0x0a, at);
    const lineEnd = end < 0 ? patch.length : end;
    const first = patch[at];
    // Only header lines matter: "diff --git", "index …", "Binary files …".
    if (first === 0x64 || (inHeader && (first === 0x69 || first === 0x42 || first === 0x40 || first === 0x2d))) {
      const line = patch.subarray(at, Math.min(lineEnd, at + 300)).toString("latin1");
      if (line.startsWith("diff --git ")) {
        inHeader = true;
        newOid = null;
      } else if (inHeader && line.startsWith("index ")) {
        newOid = /^index [0-9a-f]+\.\.([0-9a-f]+)/.exec(line)?.[1] ?? null;
      } else if (inHeader && line.startsWith("Binary files ")) {
        if (newOid !== null && isObjectId(newOid) && !EMPTY_OID.test(newOid)) oids.add(newOid);
        inHeader = false;
      } else if (line.startsWith("@@") || line.startsWith("--- ")) {
        inHeader = false;
      }
    }
    at = lineEnd + 1;
  }
  return [...oids];
}

/** The content of each blob, by object id (`git cat-file --batch`); fails if one is missing. */
export function blobContents(oids: readonly string[], maxBytes: number): GitCommand<Map<string, Buffer>> {
  return {
    args: ["cat-file", "--batch"],
    input: oids.map((oid) => `${oidArg(oid)}\n`).join(""),
    maxOutputBytes: maxBytes,
    parse: (out) => {
      const blobs = new Map<string, Buffer>();
      let at = 0;
      while (at < out.stdout.length) {
        const end = out.stdout.indexOf(0x0a, at);
        if (end < 0) break;
        const header = out.stdout.subarray(at, end).toString("latin1");
        const match = /^([0-9a-f]+) blob (\d+)$/.exec(header);
        if (!match) {
          throw new StrataError("GIT_FAILED", `git cat-file could not read an object: ${header.slice(0, 200)}`, {
            data: { subcommand: "cat-file" },
          });
        }
        const size = Number(match[2]);
        blobs.set(match[1] as string, out.stdout.subarray(end + 1, end + 1 + size));
        at = end + 1 + size + 1;
      }
      for (const oid of oids) {
        if (!blobs.has(oid)) {
          throw new StrataError("GIT_FAILED", `git cat-file did not print object ${oid}.`, {
            data: { subcommand: "cat-file" },
          });
        }
      }
      return blobs;
    },
  };
}

// --- snapshot commits and refs -------------------------------------------------------------------

export interface CommitIdentity {
  name: string;
  email: string;
  /** Seconds since the epoch. */
  when: number;
}

/**
 * The text of a commit object, byte for byte what `git commit-tree` writes for these parents,
 * identity and message (UTC dates, no encoding header: the message is UTF-8).
 */
export function commitText(tree: string, parents: readonly string[], message: string, who: CommitIdentity): string {
  const unsafe = (text: string, bytes: readonly string[]) => bytes.some((b) => text.includes(b));
  if (unsafe(who.name, ["<", ">", "\n", "\u0000"]) || unsafe(who.email, ["<", ">", "\n", "\u0000"])) {
    throw new StrataError("INVALID_INPUT", "Refusing an unsafe commit identity.");
  }
  if (unsafe(message, ["\u0000"])) throw new StrataError("INVALID_INPUT", "Refusing a commit message with a NUL byte.");
  const ident = `${who.name} <${who.email}> ${Math.floor(who.when)} +0000`;
  const header = [`tree ${oidArg(tree)}`, ...parents.map((p) => `parent ${oidArg(p)}`)];
  return `${header.join("\n")}\nauthor ${ident}\ncommitter ${ident}\n\n${message}`;
}

/** Writes a commit object (checked by git) from its text on stdin and prints its id. */
export function writeCommitObject(text: string | Promise<string>): GitCommand<string> {
  return {
    args: ["hash-object", "-t", "commit", "-w", "--stdin"],
    input: text,
    parse: oneObjectId("hash-object"),
  };
}

/** The `update-ref --stdin -z` instruction that points a ref at an object. */
export function refUpdate(name: string, oid: string): string {
  return nulInput([`update ${refArg(name)}`, oidArg(oid), ""]);
}

/** Moves refs as `refUpdate` instructions say, in one transaction. No hooks run. */
export function updateRefs(instructions: string | Promise<string>): GitCommand<void> {
  return {
    args: ["-c", "core.hooksPath=/dev/null", "update-ref", "--no-deref", "--stdin", "-z"],
    input: instructions,
    parse: () => undefined,
  };
}

// --- fetching (baseline evidence) ----------------------------------------------------------------

/** `git fetch` that brings only what it is asked for and leaves nothing else behind. */
export const QUIET_FETCH = [
  "fetch",
  "--quiet",
  "--no-tags",
  "--no-recurse-submodules",
  "--no-write-fetch-head",
  "--no-auto-maintenance",
] as const;

/** Fetches one branch into its remote-tracking ref, never waiting for input. */
export function fetchBranch(remote: string, branch: string, timeoutMs: number): GitCommand<void> {
  refArg(remote, "remote");
  refArg(branch, "branch");
  return {
    args: [
      "-c",
      "core.hooksPath=/dev/null",
      ...QUIET_FETCH,
      "--",
      remote,
      `+refs/heads/${branch}:refs/remotes/${remote}/${branch}`,
    ],
    timeoutMs,
    parse: () => undefined,
  };
}

// --- submodules ----------------------------------------------------------------------------------

/** Whether any remote-tracking ref of the repository contains this commit. */
export function remoteRefsContaining(commit: string): GitCommand<boolean> {
  return {
    args: ["for-each-ref", "--count=1", "--format=%(refname)", `--contains=${oidArg(commit)}`, "refs/remotes/"],
    parse: (out) => out.stdout.length > 0,
  };
}

/** Submodule paths a .gitmodules file declares. */
export function gitmodulesPaths(): GitCommand<string[]> {
  return {
    args: ["config", "-z", "--file=.gitmodules", "--get-regexp", "^submodule\\..*\\.path$"],
    okExitCodes: [0, 1],
    parse: (out) =>
      splitNul(out.stdout)
        .map((record) => record.slice(record.indexOf("\n") + 1))
        .filter((p) => p !== ""),
  };
}

/** The .gitattributes files an index holds. */
export function attributeFilesIn(indexFile: string): GitCommand<string[]> {
  return {
    args: ["ls-files", "-z", ...pathArgs([":(glob)**/.gitattributes"])],
    env: { GIT_INDEX_FILE: indexFile },
    parse: (out) => splitNul(out.stdout),
  };
}

/** The tree a commit points at. */
export function treeOf(commit: string): GitCommand<string> {
  return { args: ["rev-parse", "--verify", `${oidArg(commit)}^{tree}`], parse: oneObjectId("rev-parse") };
}

/** Where a symbolic ref points (full name), or null when it is not one. */
export function symbolicRefTarget(name: string): GitCommand<string | null> {
  return {
    args: ["symbolic-ref", "--quiet", refArg(name)],
    okExitCodes: [0, 1, 128],
    parse: (out) => (out.exitCode === 0 ? decodeUtf8(out.stdout).trim() || null : null),
  };
}
