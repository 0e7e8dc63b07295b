// Walking a directory as the `dir` backend sees it: files, symbolic links (read, never
// followed), directories; the secret deny-list applied on the way (a denied directory is not
// entered), links that point out of the directory and special files left out and reported.
import { lstatSync, readdirSync, readlinkSync, type Dirent, type Stats } from "node:fs";
import { lstat, readdir, readlink } from "node:fs/promises";
import { setImmediate as nextTurn } from "node:timers/promises";
import { join } from "node:path";
import { linkStaysInside, type DirOmission } from "../../domain/dir-manifest.ts";
import { StrataError } from "../../domain/errors.ts";
import { deniedPathRule } from "../../domain/deny-list.ts";

export type WalkedEntry =
  | { type: "file"; path: string; mode: number; stats: Stats }
  | { type: "symlink"; path: string; target: string }
  | { type: "dir"; path: string; mode: number };

export interface Walk {
  entries: WalkedEntry[];
  omitted: DirOmission[];
}

/** How many lstat/readdir calls run at once. */
const PARALLEL = 32;

interface WalkCalls {
  lstat(path: string): Promise<Stats>;
  readdir(path: string): Promise<Dirent[]>;
  readlink(path: string): Promise<string>;
}

/** Through libuv's thread pool: a tree being read from disk is read many calls at a time. */
const POOLED: WalkCalls = { lstat, readdir: (path) => readdir(path, { withFileTypes: true }), readlink };

/**
 * Made directly: for a tree this process has just written, every call is answered from the
 * kernel's caches, and a round trip through the pool costs several times the call itself.
 * The walk lets other work run every DIRECT_TURN calls.
 */
let directCalls = 0;
const DIRECT_TURN = 256;
const direct =
  <A, R>(call: (arg: A) => R) =>
  async (arg: A): Promise<R> => {
    if (++directCalls % DIRECT_TURN === 0) await nextTurn();
    return call(arg);
  };
const DIRECT: WalkCalls = {
  lstat: direct((path: string) => lstatSync(path)),
  readdir: direct((path: string) => readdirSync(path, { withFileTypes: true })),
  readlink: direct((path: string) => readlinkSync(path)),
};

function unreadable(path: string, error: unknown): StrataError {
  const code = (error as NodeJS.ErrnoException).code ?? "error";
  return new StrataError("UNREADABLE_PATH", `${path} cannot be read (${code}).`, {
    hint: "Make the directory readable by this user, then capture again.",
    data: { path, code },
    cause: error,
  });
}

/** Maps over `items` with at most PARALLEL calls in flight, keeping order. */
export async function mapParallel<T, R>(
  items: readonly T[],
  fn: (item: T) => Promise<R>,
  parallel = PARALLEL,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, worker));
  return out;
}

/**
 * Every entry below `root` (paths relative, "/"-separated, sorted), or below the listed
 * `include` paths only. `denyList: false` walks everything (a restore's verification);
 * `justWritten`: the tree was written by this process a moment ago (its calls are made directly).
 */
export async function walkDir(
  root: string,
  opts: { include?: readonly string[] | null; denyList?: boolean; justWritten?: boolean; signal?: AbortSignal } = {},
): Promise<Walk> {
  const { lstat, readdir, readlink } = opts.justWritten ? DIRECT : POOLED;
  const entries: WalkedEntry[] = [];
  const omitted: DirOmission[] = [];
  const useDenyList = opts.denyList ?? true;

  const visit = async (path: string): Promise<string[]> => {
    const abs = join(root, path);
    let stats: Stats;
    try {
      stats = await lstat(abs);
    } catch (error) {
      // Gone between the listing and now: a file deleted during the capture is simply not in it.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw unreadable(path, error);
    }
    const isDir = stats.isDirectory();
    const denied = useDenyList ? deniedPathRule(isDir ? `${path}/` : path) : null;
    if (denied) {
      omitted.push({ path, reason: `secret (${denied})` });
      return [];
    }
    if (stats.isSymbolicLink()) {
      const target = await readlink(abs);
      if (!linkStaysInside(path, target)) omitted.push({ path, reason: "link points out of the directory" });
      else entries.push({ type: "symlink", path, target });
      return [];
    }
    if (stats.isFile()) {
      entries.push({ type: "file", path, mode: stats.mode & 0o7777, stats });
      return [];
    }
    if (!isDir) {
      omitted.push({ path, reason: "not a file, link or directory" });
      return [];
    }
    entries.push({ type: "dir", path, mode: stats.mode & 0o7777 });
    let children: Dirent[];
    try {
      children = await readdir(abs);
    } catch (error) {
      throw unreadable(path, error);
    }
    return children.map((c) => `${path}/${c.name}`);
  };

  const walkFrom = async (start: string[]) => {
    let level = start;
    while (level.length > 0) {
      opts.signal?.throwIfAborted();
      const children = await mapParallel(level, visit);
      level = children.flat();
    }
  };

  if (opts.include && opts.include.length > 0) {
    // Only the listed paths that exist (a cache directory not made yet is simply not captured).
    const present: string[] = [];
    for (const path of opts.include) {
      try {
        await lstat(join(root, path));
        present.push(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw unreadable(path, error);
      }
    }
    await walkFrom(present);
  } else {
    let top: Dirent[];
    try {
      top = await readdir(root);
    } catch (error) {
      throw unreadable(".", error);
    }
    await walkFrom(top.map((d) => d.name));
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  omitted.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { entries, omitted };
}
