// The git calls a restore makes, as plain data (see runner.ts). Every call runs in the staging
// repository the restore created, with hooks, fsmonitor and automatic maintenance off, so a
// restore has no side effect beyond the directory it builds.
import { StrataError } from "../domain/errors.ts";
import { oidArg, QUIET_FETCH } from "./commands.ts";
import { decodeUtf8, nulInput, pathArgs, refArg, splitNul, type GitCommand } from "./runner.ts";

/** Settings for every call in a staging repository. */
const RESTORE_CONFIG = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "gc.auto=0",
  "-c",
  "maintenance.auto=false",
];

/** Fetches only over https, http, ssh, git and local paths; never a remote helper. */
const FETCH_PROTOCOLS = [
  "-c",
  "protocol.allow=never",
  "-c",
  "protocol.https.allow=always",
  "-c",
  "protocol.http.allow=always",
  "-c",
  "protocol.ssh.allow=always",
  "-c",
  "protocol.git.allow=always",
  "-c",
  "protocol.file.allow=always",
];

/** The ssh command a restore fetches with unless the user configured their own. */
export const BATCH_SSH_COMMAND = "ssh -o BatchMode=yes -o ConnectTimeout=15";

function onIndex(indexFile: string): Record<string, string> {
  return { GIT_INDEX_FILE: indexFile, GIT_OPTIONAL_LOCKS: "1" };
}

/** A new repository with no template (so no hooks), in the snapshot's object format. */
export function initRestoreRepository(dir: string, objectFormat: "sha1" | "sha256"): GitCommand<void> {
  return {
    args: [...RESTORE_CONFIG, "init", "--quiet", "--template=", `--object-format=${objectFormat}`, ...pathArgs([dir])],
    parse: () => undefined,
  };
}

/** Whether a commit is in the object store (alternates included). */
export function hasCommit(oid: string): GitCommand<boolean> {
  return {
    args: [...RESTORE_CONFIG, "cat-file", "-e", `${oidArg(oid)}^{commit}`],
    okExitCodes: [0, 1, 128],
    parse: (out) => out.exitCode === 0,
  };
}

/**
 * Writes each file's bytes, exactly as they are (no clean filters), as a blob object and
 * returns their object ids in order: the content of files a patch carries whole (patch-chain.ts).
 */
export function writeBlobObjects(files: readonly string[]): GitCommand<string[]> {
  if (files.some((file) => file.includes("\n"))) {
    throw new StrataError("INVALID_INPUT", "Refusing a file name with a line break.");
  }
  return {
    args: [...RESTORE_CONFIG, "hash-object", "-w", "--no-filters", "--stdin-paths"],
    input: files.map((file) => `${file}\n`).join(""),
    parse: (out) => decodeUtf8(out.stdout).split("\n").filter(Boolean),
  };
}

/** The user's own ssh command from configuration (core.sshCommand), if any. */
export function configuredSshCommand(): GitCommand<string | null> {
  return {
    args: ["config", "--get", "core.sshCommand"],
    okExitCodes: [0, 1],
    parse: (out) => (out.exitCode === 0 ? decodeUtf8(out.stdout).trim() || null : null),
  };
}

export interface FetchSettings {
  /** `--depth=1`: only the commits asked for (a shallow repository). */
  shallow: boolean;
  /** `--unshallow`: the full history behind a shallow repository's cut (not with `shallow`). */
  unshallow?: boolean;
  /**
   * Keep what arrives as one pack (never loose objects): readers of a shared store that do not
   * hold its lock then see all of a fetch's objects at once, or none.
   */
  wholePack?: boolean;
  timeoutMs: number;
  /** GIT_SSH_COMMAND for this call, or null to keep the user's. */
  sshCommand: string | null;
}

/**
 * Fetches refspecs from a recorded remote, never waiting for input (the runner sets
 * GIT_TERMINAL_PROMPT=0; ssh runs in batch mode). `url` was checked by the record check.
 */
export function fetchRefspecs(url: string, refspecs: readonly string[], s: FetchSettings): GitCommand<void> {
  if (url.startsWith("-")) throw new StrataError("INVALID_INPUT", "Refusing a remote that starts with '-'.");
  for (const refspec of refspecs) refArg(refspec, "refspec");
  return {
    args: [
      ...RESTORE_CONFIG,
      ...FETCH_PROTOCOLS,
      ...(s.wholePack ? ["-c", "fetch.unpackLimit=1"] : []),
      ...QUIET_FETCH,
      ...(s.shallow ? ["--depth=1"] : s.unshallow ? ["--unshallow"] : []),
      "--",
      url,
      ...refspecs,
    ],
    env: s.sshCommand ? { GIT_SSH_COMMAND: s.sshCommand } : undefined,
    timeoutMs: s.timeoutMs,
    parse: () => undefined,
  };
}

/**
 * Packs the given objects into one pack under `packBase` (`<objects>/pack/pack`); git names the
 * files after their content. With `prunePacked` after it, a repository's loose objects (on disk
 * each takes a block and its fan-out directory another) become one pack.
 */
export function packObjects(packBase: string, oids: readonly string[]): GitCommand<void> {
  if (!packBase.startsWith("/")) throw new StrataError("INVALID_INPUT", "A pack must be named by an absolute path.");
  for (const oid of oids) oidArg(oid);
  return {
    args: [...RESTORE_CONFIG, "pack-objects", "--quiet", "--local", packBase],
    input: `${oids.join("\n")}\n`,
    parse: () => undefined,
  };
}

/** Removes the loose objects a pack of the repository already holds. */
export function prunePacked(): GitCommand<void> {
  return { args: [...RESTORE_CONFIG, "prune-packed", "--quiet"], parse: () => undefined };
}

/** Unpacks a bundle file into the object store (its prerequisites must be present). */
export function unbundle(file: string): GitCommand<void> {
  if (!file.startsWith("/")) throw new StrataError("INVALID_INPUT", "A bundle file must be an absolute path.");
  return { args: [...RESTORE_CONFIG, "bundle", "unbundle", file], parse: () => undefined };
}

/**
 * Fills an index from a tree or commit (primes the cache tree, so later write-trees are cheap).
 * A new index is written in version 4, as git's `feature.manyFiles` does: each path is stored as
 * what it does not share with the one before, a fifth of a large index's size; git keeps an
 * index's version when it writes it again.
 */
export function readTreeToIndex(indexFile: string, treeish: string): GitCommand<void> {
  return {
    args: [...RESTORE_CONFIG, "-c", "index.version=4", "read-tree", oidArg(treeish)],
    env: onIndex(indexFile),
    parse: () => undefined,
  };
}

/**
 * Applies binary patch files to the index only, in order (each onto what the ones before made);
 * all of them or nothing (git apply is atomic).
 */
export function applyPatchToIndex(indexFile: string, ...patchFiles: [string, ...string[]]): GitCommand<void> {
  return {
    args: [...RESTORE_CONFIG, "apply", "--cached", "--binary", "--whitespace=nowarn", ...pathArgs(patchFiles)],
    env: onIndex(indexFile),
    parse: () => undefined,
  };
}

/**
 * Writes every index entry into the working tree and records the files' stat data, with one
 * writer per core (parallel checkout): creating files dominates a restore. Git LFS files are
 * written as their pointers: a smudge filter would download each object from wherever this
 * host's configuration points, possibly asking for credentials (restore-lfs.ts fetches them).
 */
export function checkoutIndex(indexFile: string): GitCommand<void> {
  return {
    args: [...RESTORE_CONFIG, "-c", "checkout.workers=0", "checkout-index", "--all", "--force", "--index"],
    env: { ...onIndex(indexFile), GIT_LFS_SKIP_SMUDGE: "1" },
    parse: () => undefined,
  };
}

// --- Git LFS ------------------------------------------------------------------------------------

/** The filter `git lfs install` configures; a restored worktree with LFS files gets it locally. */
export const LFS_FILTER_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ["filter.lfs.clean", "git-lfs clean -- %f"],
  ["filter.lfs.smudge", "git-lfs smudge -- %f"],
  ["filter.lfs.process", "git-lfs filter-process"],
  ["filter.lfs.required", "true"],
];

/** The paths whose `filter` attribute is `lfs`, read with the .gitattributes files the index holds. */
export function lfsFilteredPaths(indexFile: string, paths: readonly string[]): GitCommand<Set<string>> {
  return {
    args: [...RESTORE_CONFIG, "check-attr", "--cached", "-z", "--stdin", "filter"],
    env: { GIT_INDEX_FILE: indexFile },
    input: nulInput(paths),
    parse: (out) => {
      const fields = splitNul(out.stdout);
      const lfs = new Set<string>();
      for (let i = 0; i + 2 < fields.length; i += 3) if (fields[i + 2] === "lfs") lfs.add(fields[i] ?? "");
      return lfs;
    },
  };
}

export interface LfsFetchSettings {
  timeoutMs: number;
  /** GIT_SSH_COMMAND for this call, or null to keep the user's. */
  sshCommand: string | null;
}

/**
 * Downloads the LFS objects the files of `tree` need from one remote (a URL: git-lfs serves
 * `file://` ones with its own file transfer), skipping those already here. Never waits for
 * input: no credential helper runs, git never prompts (the runner's GIT_TERMINAL_PROMPT=0), ssh
 * runs in batch mode. The repository's .lfsconfig may name another LFS server, as in any clone.
 * Exit 2 means some objects could not be had, which the caller finds out from what is here.
 */
export function lfsFetch(url: string, tree: string, s: LfsFetchSettings): GitCommand<void> {
  if (url.startsWith("-")) throw new StrataError("INVALID_INPUT", "Refusing a remote that starts with '-'.");
  return {
    args: [
      ...RESTORE_CONFIG,
      "-c",
      "credential.helper=",
      "-c",
      "lfs.fetchrecentalways=false",
      "lfs",
      "fetch",
      // Every LFS file of the tree, whatever lfs.fetchinclude / lfs.fetchexclude say.
      "--include=",
      "--exclude=",
      url,
      oidArg(tree),
    ],
    env: s.sshCommand ? { GIT_SSH_COMMAND: s.sshCommand } : undefined,
    timeoutMs: s.timeoutMs,
    okExitCodes: [0, 2],
    parse: () => undefined,
  };
}

/**
 * Writes these files of the index again through the LFS filter (configured in the repository),
 * once their objects are in its LFS store: the smudge filter copies them, downloading nothing.
 */
export function smudgeLfsFiles(indexFile: string, paths: readonly string[]): GitCommand<void> {
  return {
    args: [...RESTORE_CONFIG, "checkout-index", "--force", "--index", "-z", "--stdin"],
    env: onIndex(indexFile),
    input: nulInput(paths),
    parse: () => undefined,
  };
}

/**
 * Re-reads every file of the index and compares its content (through this host's filters)
 * with the recorded blob; returns the paths that differ.
 */
export function filesDifferingFromIndex(indexFile: string): GitCommand<string[]> {
  return {
    args: [...RESTORE_CONFIG, "update-index", "--really-refresh", "-q"],
    env: onIndex(indexFile),
    okExitCodes: [0, 1],
    parse: (out) => parseNeedsUpdate(decodeUtf8(out.stdout)),
  };
}

/** `update-index --refresh` prints `<path>: needs update` for each path whose content differs. */
export function parseNeedsUpdate(text: string): string[] {
  const suffix = ": needs update";
  return text
    .split("\n")
    .filter((line) => line.endsWith(suffix))
    .map((line) => line.slice(0, -suffix.length));
}

/** Sets index entries afresh (no stat data), so git reads those files again before trusting them. */
export function setIndexEntriesAfresh(
  indexFile: string,
  entries: ReadonlyArray<{ mode: string; oid: string; path: string }>,
): GitCommand<void> {
  return {
    args: [...RESTORE_CONFIG, "update-index", "-z", "--index-info"],
    env: onIndex(indexFile),
    input: nulInput(entries.map((e) => `${e.mode} ${oidArg(e.oid)}\t${e.path}`)),
    parse: () => undefined,
  };
}

/** Every file entry of a tree, recursively (`ls-tree -r`), by path. */
export function treeFiles(tree: string): GitCommand<Map<string, { mode: string; oid: string }>> {
  return {
    args: [...RESTORE_CONFIG, "ls-tree", "-r", "-z", "--full-tree", oidArg(tree)],
    parse: (out) => {
      const files = new Map<string, { mode: string; oid: string }>();
      for (const record of splitNul(out.stdout)) {
        const tab = record.indexOf("\t");
        const [mode = "", , oid = ""] = record.slice(0, tab).split(" ");
        files.set(record.slice(tab + 1), { mode, oid });
      }
      return files;
    },
  };
}

/** The commit's tree. */
export function commitTree(commit: string): GitCommand<string> {
  return {
    args: [...RESTORE_CONFIG, "rev-parse", "--verify", "--end-of-options", `${oidArg(commit)}^{tree}`],
    parse: (out) => decodeUtf8(out.stdout).trim(),
  };
}

/** A ref's commit, or null. */
export function refCommit(ref: string): GitCommand<string | null> {
  return {
    args: [...RESTORE_CONFIG, "rev-parse", "--verify", "--quiet", "--end-of-options", `${refArg(ref)}^{commit}`],
    okExitCodes: [0, 1, 128],
    parse: (out) => (out.exitCode === 0 ? decodeUtf8(out.stdout).trim() : null),
  };
}

export function setRef(ref: string, oid: string): GitCommand<void> {
  return {
    args: [...RESTORE_CONFIG, "update-ref", "-m", "strata restore", "--no-deref", refArg(ref), oidArg(oid)],
    parse: () => undefined,
  };
}

/** Points HEAD at a branch (which may not exist yet, on an unborn branch). */
export function headToBranch(branch: string): GitCommand<void> {
  return {
    args: [...RESTORE_CONFIG, "symbolic-ref", "-m", "strata restore", "HEAD", refArg(`refs/heads/${branch}`)],
    parse: () => undefined,
  };
}

/** Sets one configuration value in the repository's own configuration. */
export function setConfig(key: string, value: string): GitCommand<void> {
  if (value.startsWith("-"))
    throw new StrataError("INVALID_INPUT", "Refusing a configuration value that starts with '-'.");
  return { args: [...RESTORE_CONFIG, "config", "--local", refArg(key, "config key"), value], parse: () => undefined };
}
