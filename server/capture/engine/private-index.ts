// The private index a capture builds its tree in. It is kept between captures (so unchanged
// files are not read again) and rebuilt from the user's index whenever something it depends on
// changed: the user's index (what is tracked), the exclude files, the configuration. Losing or
// damaging it only costs time: it is rebuilt, never trusted blindly.
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { copyFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { createHash } from "node:crypto";
import type { z } from "zod";
import { configMatching, emptyTree, readTreeInto, resolveCommit, type RepositoryLayout } from "../../git/commands.ts";
import { captureMemoSchema } from "./capture-memo.ts";
import { nulInput, splitNul, type GitCommand, type GitRunner } from "../../git/runner.ts";

interface PrivateIndexState {
  version: 1;
  /** Digest of the stat data of everything the index's content depends on besides the files. */
  fingerprint: string;
  excludesFile: string | null;
  ignoreCase: boolean;
  /** The tree of the index after the last capture, and the index file's stat data then. */
  tree: string | null;
  indexSignature: string | null;
  /** The .gitignore files that differed from HEAD at the last capture (see capture.ts). */
  ignoreFilesSignature: string | null;
  /**
   * Whether the last capture left entries of files modified in the second the index was
   * written ("racily clean": git re-checks them by content until the index is written in a
   * later second). `git status` rewrites such an index merely to mark them, so the next
   * capture's status does not: if that capture changes the index, writing it does the same; if
   * not, the flag is cleared and the status after it writes. Stat data that status refreshed
   * (files touched but not changed) is written by that later status, not this one.
   */
  racyEntries: boolean;
  /** Answers of earlier captures, each valid while its key holds (see capture.ts). */
  memo: CaptureMemo;
}

/**
 * `config`: remote URLs and filter settings, keyed by the configuration files' text.
 * `attributeFiles`: the .gitattributes files the index holds (dropped when it is rebuilt).
 * `unpushed`: unpushed commits and their denied paths, keyed by HEAD and the remote-tracking refs.
 * `verbatim`: the files a restore writes verbatim, for a tree and the attribute files outside it.
 */
type CaptureMemo = z.infer<typeof captureMemoSchema>;

export interface PrivateIndex {
  readonly indexFile: string;
  readonly dir: string;
  readonly state: PrivateIndexState;
  /** Whether it was (re)built from the user's index during this capture. */
  readonly seeded: boolean;
  /** Rebuilds it from the user's index (after damage, or when the ignore rules changed). */
  reseed(): Promise<void>;
  /** Records the tree the index now holds, for the next capture. */
  save(tree: string): Promise<void>;
  release(): Promise<void>;
  /** The index file's current stat signature. */
  signature(): Promise<string | null>;
  /** Remembers which .gitignore files the index was built against. */
  noteIgnoreFiles(signature: string): void;
  /** Remembers whether this capture's index writes left racily clean entries. */
  noteRacyEntries(racy: boolean): void;
  /** Keeps answers for the next capture (written by `save`). */
  remember(update: Partial<CaptureMemo>): void;
}

export interface PrivateIndexOptions {
  /** A directory of caches for many repositories; default `<git-dir>/strata`. */
  cacheDir?: string;
  includeUntracked: boolean;
}

const LOCK_STALE_MS = 10 * 60_000;

type CaptureMode = "all" | "tracked";

/** The files of one kind of capture (with or without untracked files) in a cache directory. */
function captureFiles(dir: string, mode: CaptureMode) {
  return {
    index: join(dir, `index-${mode}`),
    state: join(dir, `state-${mode}.json`),
    lock: join(dir, `capture-${mode}.lock`),
  };
}

/** The index files captures of this checkout keep (with and without untracked files), in `<git-dir>/strata`. */
export function captureIndexFiles(layout: RepositoryLayout): string[] {
  const dir = privateIndexDirectory(layout);
  return [captureFiles(dir, "all").index, captureFiles(dir, "tracked").index];
}

export function privateIndexDirectory(layout: RepositoryLayout, cacheDir?: string): string {
  if (!cacheDir) return join(layout.gitDir, "strata");
  const key = createHash("sha256").update(layout.gitDir).digest("hex").slice(0, 24);
  return join(cacheDir, key);
}

// The reads and the lock at the start of every capture are synchronous: each costs
// microseconds, less than the thread-pool round trip of its asynchronous form.
function statSignature(path: string): string {
  try {
    const st = statSync(path, { bigint: true, throwIfNoEntry: false });
    return st ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : "missing";
  } catch {
    return "missing";
  }
}

function globalConfigFiles(env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME ?? homedir();
  const xdg = env.XDG_CONFIG_HOME || join(home, ".config");
  return [env.GIT_CONFIG_GLOBAL ?? join(home, ".gitconfig"), join(xdg, "git", "config"), "/etc/gitconfig"];
}

function defaultExcludesFile(env: NodeJS.ProcessEnv): string {
  const home = env.HOME ?? homedir();
  return join(env.XDG_CONFIG_HOME || join(home, ".config"), "git", "ignore");
}

function fingerprintOf(layout: RepositoryLayout, excludesFile: string | null): string {
  const files = [
    join(layout.gitDir, "index"),
    join(layout.commonDir, "info", "exclude"),
    join(layout.commonDir, "config"),
    join(layout.gitDir, "config.worktree"),
    excludesFile ?? defaultExcludesFile(process.env),
    ...globalConfigFiles(process.env),
  ];
  const signatures = files.map(statSignature);
  return createHash("sha256")
    .update(JSON.stringify([files, signatures]))
    .digest("hex");
}

function expandHome(path: string): string {
  return path.startsWith("~/") ? join(process.env.HOME ?? homedir(), path.slice(2)) : path;
}

function readState(file: string): PrivateIndexState | null {
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<PrivateIndexState>;
    if (parsed.version !== 1 || typeof parsed.fingerprint !== "string") return null;
    return {
      version: 1,
      fingerprint: parsed.fingerprint,
      excludesFile: typeof parsed.excludesFile === "string" ? parsed.excludesFile : null,
      ignoreCase: parsed.ignoreCase === true,
      tree: typeof parsed.tree === "string" ? parsed.tree : null,
      indexSignature: typeof parsed.indexSignature === "string" ? parsed.indexSignature : null,
      ignoreFilesSignature: typeof parsed.ignoreFilesSignature === "string" ? parsed.ignoreFilesSignature : null,
      racyEntries: parsed.racyEntries === true,
      memo: captureMemoSchema.safeParse(parsed.memo).data ?? {},
    };
  } catch {
    return null;
  }
}

async function writeAtomically(file: string, content: string): Promise<void> {
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  await writeFile(tmp, content);
  await rename(tmp, file);
}

function takeLock(lockFile: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, "wx");
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const st = statSync(lockFile, { throwIfNoEntry: false });
      const age = st ? Date.now() - st.mtimeMs : Infinity;
      if (age < LOCK_STALE_MS) return false;
      rmSync(lockFile, { force: true });
    }
  }
  return false;
}

/**
 * Runs `refresh` (a read that may write the index back with refreshed stat data, as `git status`
 * does with its own index) on one of the indexes captures keep (`captureIndexFiles`), holding
 * that capture's lock so no capture changes the index meanwhile. The index still holds the same
 * tree, so the record of the last capture follows the rewrite and the next capture still trusts
 * it. Null, without running `refresh`, when a capture holds the lock.
 */
export async function refreshingCaptureIndex<T>(indexFile: string, refresh: () => Promise<T>): Promise<T | null> {
  const mode = basename(indexFile).replace(/^index-/, "");
  if (mode !== "all" && mode !== "tracked") return null;
  const files = captureFiles(dirname(indexFile), mode);
  if (!takeLock(files.lock)) return null;
  try {
    const before = statSignature(indexFile);
    const result = await refresh();
    const after = statSignature(indexFile);
    const state = after !== before ? readState(files.state) : null;
    if (state && state.indexSignature === before) {
      await writeAtomically(files.state, JSON.stringify({ ...state, indexSignature: after }));
    }
    return result;
  } finally {
    rmSync(files.lock, { force: true });
  }
}

/** Paths whose index entries carry the assume-unchanged bit (`ls-files -v` prints them lower-case). */
function assumedUnchanged(indexFile: string): GitCommand<string[]> {
  return {
    args: ["ls-files", "-z", "-v"],
    env: { GIT_INDEX_FILE: indexFile },
    parse: (out) =>
      splitNul(out.stdout)
        .filter((record) => /^[a-z] /.test(record))
        .map((record) => record.slice(2)),
  };
}

function clearAssumeUnchanged(indexFile: string, paths: readonly string[]): GitCommand<void> {
  return {
    args: ["-c", "core.splitIndex=false", "update-index", "--no-assume-unchanged", "-z", "--stdin"],
    env: { GIT_INDEX_FILE: indexFile, GIT_OPTIONAL_LOCKS: "1" },
    input: nulInput(paths),
    parse: () => undefined,
  };
}

export async function openPrivateIndex(
  git: GitRunner,
  layout: RepositoryLayout,
  opts: PrivateIndexOptions,
): Promise<PrivateIndex> {
  const dir = privateIndexDirectory(layout, opts.cacheDir);
  mkdirSync(dir, { recursive: true });
  const mode = opts.includeUntracked ? "all" : "tracked";
  const { index: sharedIndex, state: stateFile, lock: lockFile } = captureFiles(dir, mode);

  const locked = takeLock(lockFile);
  // Another capture of this checkout is running: work on a throw-away copy instead of waiting.
  const indexFile = locked ? sharedIndex : join(dir, `index-${mode}.${randomBytes(6).toString("hex")}.tmp`);
  let state = readState(stateFile);
  let saved = state ? JSON.stringify(state) : null;
  let seeded = false;

  const resolveIgnoreSettings = async () => {
    const pairs = await git.run(configMatching("^core\\.(excludesfile|ignorecase)$"));
    let excludesFile: string | null = null;
    let ignoreCase = false;
    for (const [key, value] of pairs) {
      if (key === "core.excludesfile") excludesFile = value === "" ? null : expandHome(value);
      if (key === "core.ignorecase") ignoreCase = /^(true|yes|on|1)$/i.test(value);
    }
    return { excludesFile, ignoreCase };
  };

  const reseed = async () => {
    const settings = await resolveIgnoreSettings();
    const fingerprint = fingerprintOf(layout, settings.excludesFile);
    const tmp = `${indexFile}.${randomBytes(6).toString("hex")}.seed`;
    try {
      const userIndex = join(layout.gitDir, "index");
      const source = await stat(userIndex).catch(() => null);
      if (source) {
        await copyFile(userIndex, tmp);
        // git re-checks entries changed at or after the index file's own mtime ("racily
        // clean"). The copy is dated no later than the original so that check still fires.
        const seconds = Math.floor(source.mtimeMs / 1000) - 1;
        await utimes(tmp, seconds, seconds);
        const assumed = await git.run(assumedUnchanged(tmp));
        if (assumed.length > 0) await git.run(clearAssumeUnchanged(tmp, assumed));
      } else {
        const head = await git.run(resolveCommit("HEAD"));
        const tree = head ?? (await git.run(emptyTree()));
        await git.run(readTreeInto(tmp, tree));
      }
      await rename(tmp, indexFile);
    } finally {
      await rm(tmp, { force: true });
    }
    const memo = { ...state?.memo };
    delete memo.attributeFiles;
    state = {
      version: 1,
      fingerprint,
      ...settings,
      tree: null,
      indexSignature: null,
      ignoreFilesSignature: null,
      racyEntries: false,
      memo,
    };
    seeded = true;
  };

  if (!locked) {
    await rm(indexFile, { force: true });
    await reseed();
  } else {
    const current = state ? fingerprintOf(layout, state.excludesFile) : null;
    const present = existsSync(indexFile);
    if (!state || !present || current !== state.fingerprint) await reseed();
  }

  const signature = async () => {
    const sig = statSignature(indexFile);
    return sig === "missing" ? null : sig;
  };

  return {
    indexFile,
    dir,
    get state() {
      if (!state) throw new Error("private index state read before seeding");
      return state;
    },
    get seeded() {
      return seeded;
    },
    reseed,
    signature,
    noteIgnoreFiles(signature: string) {
      if (state) state = { ...state, ignoreFilesSignature: signature };
    },
    noteRacyEntries(racy: boolean) {
      if (state) state = { ...state, racyEntries: racy };
    },
    remember(update: Partial<CaptureMemo>) {
      if (state) state = { ...state, memo: { ...state.memo, ...update } };
    },
    async save(tree: string) {
      if (!locked || !state) return;
      const next = { ...state, tree, indexSignature: await signature() };
      if (JSON.stringify(next) === saved) return;
      state = next;
      saved = JSON.stringify(next);
      await writeAtomically(stateFile, saved);
    },
    async release() {
      if (locked) await rm(lockFile, { force: true });
      else await rm(indexFile, { force: true });
    },
  };
}
