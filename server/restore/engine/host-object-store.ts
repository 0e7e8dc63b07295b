// One object store per repository per host: a bare repository under the data directory
// (`<dataDir>/objects/<repository>-<hash>.git`) that restored worktrees of the repository borrow
// objects from (objects/info/alternates). Commits a restore fetches from the remotes go into it,
// so N restores of one repository cost one base plus what each adds. It also remembers which
// commits are known pushed (`refs/remotes/strata/pushed/*`): a restored worktree gets a copy of
// those refs, so a capture there bundles only what is really unpushed, and the degraded ladder
// finds a pushed branch tip here when the remote is gone.
//
// Concurrent restores of one repository (two processes, or two hosts sharing the data
// directory) share the store: it is created whole (initialised aside, then renamed into place)
// and every write into it (fetches, refs) happens under its lock, `<store>.lock`, a file created
// exclusively that names its holder and is refreshed while held; a lock whose holder died on
// this host, or that nobody refreshed for a minute, is broken.
import { createHash, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { link, mkdir, open, readFile, rename, rm, stat, unlink, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import type { CaptureManifest } from "../../domain/capture-manifest.ts";
import { StrataError } from "../../domain/errors.ts";
import { existingObjects, oidArg } from "../../git/commands.ts";
import { repositoryIdentity, type RecordedRemote } from "../../git/remotes.ts";
import { createGitRunner, refArg, splitLines, type GitCommand, type GitRunner } from "../../git/runner.ts";

/** Commits known pushed are kept under this prefix (so captures don't bundle them). */
export const PUSHED_REF_PREFIX = "refs/remotes/strata/pushed/";

const STORE_CONFIG = ["-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0", "-c", "maintenance.auto=false"];

/** The lock is refreshed this often while held, and broken after this long without a refresh. */
const LOCK_REFRESH_MS = 5_000;
const LOCK_STALE_MS = 60_000;

export interface HostObjectStore {
  /** The bare repository. */
  readonly dir: string;
  /** Its objects directory, which restored repositories name in their alternates. */
  readonly objects: string;
  /** A runner whose calls run in the store. */
  readonly git: GitRunner;
  /** Runs fn holding the store's lock: every write into the store happens under it. */
  withLock<T>(fn: () => Promise<T>): Promise<T>;
}

interface HostObjectStoreOptions {
  gitPath?: string;
  baseEnv?: Readonly<Record<string, string | undefined>>;
  timeoutMs?: number;
  /** How long to wait for another process's lock before giving up (TIMEOUT). */
  lockWaitMs?: number;
  signal?: AbortSignal;
}

/** Where this host's shared object stores live, beside the worktree pool. */
export function objectStoresDirectory(dataDir: string): string {
  return join(dataDir, "objects");
}

/**
 * The store of the repository `remotes` name (as fetched: relative paths already resolved
 * against the checkout's root), under `storesDir`, or null without a remote: nothing tells such
 * a repository apart from another. The identity is the one snapshots and the pool key by.
 */
export function hostObjectStorePath(
  storesDir: string,
  remotes: readonly RecordedRemote[],
  objectFormat: CaptureManifest["objectFormat"],
): string | null {
  const identity = repositoryIdentity(remotes);
  if (!identity) return null;
  const name =
    basename(identity)
      .replace(/[^A-Za-z0-9._-]+/g, "-")
      .replace(/^[.-]+/, "")
      .slice(0, 48) || "repository";
  const hash = createHash("sha256").update(`${objectFormat}\0${identity}`).digest("hex").slice(0, 16);
  return join(storesDir, `${name}-${hash}.git`);
}

function initBareStore(dir: string, objectFormat: "sha1" | "sha256"): GitCommand<void> {
  return {
    args: [...STORE_CONFIG, "init", "--quiet", "--bare", "--template=", `--object-format=${objectFormat}`, "--", dir],
    parse: () => undefined,
  };
}

function configureStore(): GitCommand<void> {
  // A store is never collected automatically: worktrees borrow its objects.
  return {
    args: ["config", "--local", "gc.auto", "0"],
    parse: () => undefined,
  };
}

/** Opens the store at `dir`, creating it (whole, by a rename) when it does not exist yet. */
export async function openHostObjectStore(
  dir: string,
  objectFormat: "sha1" | "sha256",
  opts: HostObjectStoreOptions = {},
): Promise<HostObjectStore> {
  const runnerAt = (cwd: string) =>
    createGitRunner({
      cwd,
      gitPath: opts.gitPath,
      baseEnv: opts.baseEnv,
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
    });
  if (!existsSync(join(dir, "objects"))) {
    await mkdir(dirname(dir), { recursive: true });
    const aside = `${dir}.new-${randomUUID()}`;
    const git = runnerAt(dirname(dir));
    await git.run(initBareStore(aside, objectFormat));
    await runnerAt(aside).run(configureStore());
    try {
      await rename(aside, dir);
    } catch (error) {
      // Another restore created it first: use that one.
      await rm(aside, { recursive: true, force: true });
      if (!existsSync(join(dir, "objects"))) throw error;
    }
  }
  const lockFile = `${dir}.lock`;
  return {
    dir,
    objects: join(dir, "objects"),
    git: runnerAt(dir),
    withLock: (fn) => withStoreLock(lockFile, opts, fn),
  };
}

interface LockHolder {
  token: string;
  pid: number;
  host: string;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readHolder(file: string): Promise<LockHolder | null> {
  try {
    const value = JSON.parse(await readFile(file, "utf8")) as Partial<LockHolder>;
    return typeof value.token === "string" && typeof value.pid === "number" && typeof value.host === "string"
      ? { token: value.token, pid: value.pid, host: value.host }
      : null;
  } catch {
    return null;
  }
}

async function tryCreateLock(file: string, holder: LockHolder): Promise<boolean> {
  try {
    const handle = await open(file, "wx");
    try {
      await handle.writeFile(JSON.stringify(holder));
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

/** Breaks the lock when its holder died on this host or stopped refreshing it. */
async function breakIfStale(file: string): Promise<void> {
  const [holder, mtime] = await Promise.all([
    readHolder(file),
    stat(file).then(
      (s) => s.mtimeMs,
      () => null,
    ),
  ]);
  if (mtime === null) return;
  const dead = holder !== null && holder.host === hostname() && !isRunning(holder.pid);
  if (!dead && Date.now() - mtime < LOCK_STALE_MS) return;
  // Moved aside and checked, so a lock another process took meanwhile is put back, not dropped.
  const aside = `${file}.${randomUUID()}.stale`;
  try {
    await rename(file, aside);
  } catch {
    return;
  }
  const moved = await readHolder(aside);
  if (moved?.token !== holder?.token) await link(aside, file).catch(() => undefined);
  await unlink(aside).catch(() => undefined);
}

async function withStoreLock<T>(file: string, opts: HostObjectStoreOptions, fn: () => Promise<T>): Promise<T> {
  const holder: LockHolder = { token: randomUUID(), pid: process.pid, host: hostname() };
  const deadline = Date.now() + (opts.lockWaitMs ?? 15 * 60_000);
  while (!(await tryCreateLock(file, holder))) {
    if (opts.signal?.aborted)
      throw new StrataError("ABORTED", "The restore was aborted while waiting for the object store.");
    if (Date.now() > deadline) {
      throw new StrataError("TIMEOUT", `Another process kept the object store ${dirname(file)} locked.`, {
        hint: `Run the restore again; if it keeps waiting, remove ${file} once no restore runs.`,
      });
    }
    await breakIfStale(file);
    await new Promise((r) => setTimeout(r, 50 + Math.random() * 50));
  }
  const refresh = setInterval(() => {
    const now = new Date();
    void utimes(file, now, now).catch(() => undefined);
  }, LOCK_REFRESH_MS);
  refresh.unref();
  try {
    return await fn();
  } finally {
    clearInterval(refresh);
    if ((await readHolder(file))?.token === holder.token) await unlink(file).catch(() => undefined);
  }
}

// --- refs of commits known pushed -----------------------------------------------------------

/** Every remote-tracking ref of a store: its pushed refs and what full fetches left. */
function knownPushedRefs(): GitCommand<Map<string, string>> {
  return {
    args: ["for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/"],
    parse: (out) => {
      const refs = new Map<string, string>();
      for (const line of splitLines(out.stdout)) {
        const [oid, ref] = line.split(" ");
        if (oid && ref) refs.set(ref, oid);
      }
      return refs;
    },
  };
}

/**
 * Sets refs in one transaction (`update-ref --stdin`), without reflogs: these are Strata's
 * records of what was pushed, and a reflog would be a file (and a block) per ref.
 */
export function setRefs(refs: ReadonlyMap<string, string>): GitCommand<void> {
  return {
    args: [...STORE_CONFIG, "-c", "core.logAllRefUpdates=false", "update-ref", "--stdin"],
    input: [...refs].map(([ref, oid]) => `update ${refArg(ref)} ${oidArg(oid)}\n`).join(""),
    parse: () => undefined,
  };
}

/** Packs loose refs into packed-refs: pushed refs accumulate, and loose each takes a block. */
export function packRefs(): GitCommand<void> {
  return { args: [...STORE_CONFIG, "pack-refs", "--all"], parse: () => undefined };
}

/** The name a branch tip known pushed to `remote` is kept under (`HEAD` for a detached checkout). */
export function pushedTipRef(remote: string, branch: string | null): string {
  return `${PUSHED_REF_PREFIX}${remote}/${branch ?? "HEAD"}`;
}

/**
 * Records commits known pushed in the store: each under its id, and the branch tips under
 * `<remote>/<branch>`. Only commits the store holds are recorded; a tip that cannot be named
 * (a branch `a` beside `a/b`) is left out rather than failing the restore.
 */
export async function recordPushedInStore(
  store: HostObjectStore,
  commits: readonly string[],
  tips: ReadonlyMap<string, string>,
): Promise<void> {
  const wanted = [...new Set([...commits, ...tips.values()])];
  if (wanted.length === 0) return;
  await store.withLock(async () => {
    const present = await store.git.run(existingObjects(wanted));
    const byId = new Map(commits.filter((c) => present.has(c)).map((c) => [`${PUSHED_REF_PREFIX}${c}`, c]));
    if (byId.size > 0) await store.git.run(setRefs(byId));
    for (const [ref, oid] of tips) {
      if (present.has(oid)) await store.git.run(setRefs(new Map([[ref, oid]]))).catch(() => undefined);
    }
    await store.git.run(packRefs());
  });
}

/** The distinct commits the store knows pushed (its pushed refs and its remote-tracking refs). */
export async function pushedCommitsInStore(store: HostObjectStore): Promise<string[]> {
  return [...new Set((await store.git.run(knownPushedRefs())).values())];
}

/**
 * A branch tip (or a detached checkout's remote HEAD) known pushed to one of `remotes`, from the
 * store: the tip a restore recorded, else the remote-tracking branch a full fetch left.
 */
export async function pushedTipInStore(
  store: HostObjectStore,
  remotes: readonly string[],
  branch: string | null,
): Promise<string | null> {
  const refs = await store.git.run(knownPushedRefs());
  for (const remote of remotes) {
    const tip =
      refs.get(pushedTipRef(remote, branch)) ?? (branch ? refs.get(`refs/remotes/${remote}/${branch}`) : undefined);
    if (tip) return tip;
  }
  return null;
}

/** The commits the store's history is cut at (its `shallow` file), for borrowers to graft too. */
export async function shallowCommitsInStore(store: HostObjectStore): Promise<string[]> {
  return shallowCommitsIn(store.dir);
}

async function shallowCommitsIn(gitDir: string): Promise<string[]> {
  const text = await readFile(join(gitDir, "shallow"), "utf8").catch(() => "");
  return splitLines(Buffer.from(text)).filter((l) => /^[0-9a-f]{40,64}$/.test(l));
}

/**
 * Gives a repository that borrows the store's objects the store's shallow cut too: a commit at
 * the cut has parents the store never fetched, and git in the borrowing repository (unpacking a
 * bundle built on that commit, `git log`) would otherwise look for them and fail. Returns
 * whether the store's history is cut at all.
 */
export async function adoptShallowCut(gitDir: string, store: HostObjectStore): Promise<boolean> {
  const cut = await shallowCommitsInStore(store);
  if (cut.length === 0) return false;
  const own = await shallowCommitsIn(gitDir);
  const all = [...new Set([...own, ...cut])];
  if (all.length > own.length) await writeFile(join(gitDir, "shallow"), `${all.join("\n")}\n`);
  return true;
}
