// The file operations the pool's state is made of, each safe on a filesystem several hosts share
// (NFS included): a whole file appears at once (written to a temporary file, synced, then
// renamed or linked into place), an exclusive create is a hard link (atomic on NFS, where
// O_EXCL was not always), and a JSON file that does not parse is reported, never guessed at.
import { randomUUID } from "node:crypto";
import { link, mkdir, open, readFile, rename, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";

export function isErrno(error: unknown, ...codes: string[]): boolean {
  return codes.includes((error as NodeJS.ErrnoException | null)?.code ?? "");
}

/** Writes `data` to a new file in `tmpDir` and syncs it; returns its path. */
async function writeTemporary(tmpDir: string, data: string): Promise<string> {
  const tmp = join(tmpDir, `${randomUUID()}.tmp`);
  const file = await open(tmp, "wx");
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
  return tmp;
}

/** Syncs a directory, so a rename or link in it survives a crash of the machine. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r").catch(() => null);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // Some filesystems refuse to sync a directory; the rename is still atomic.
  } finally {
    await handle.close();
  }
}

function serialize(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Replaces `path` with `value` as JSON, all at once (temporary file, sync, rename). */
export async function writeJsonAtomic(
  path: string,
  value: unknown,
  opts: { tmpDir: string; syncDir?: boolean },
): Promise<void> {
  const tmp = await writeTemporary(opts.tmpDir, serialize(value));
  try {
    await rename(tmp, path);
  } catch (error) {
    await unlink(tmp).catch(() => undefined);
    throw error;
  }
  if (opts.syncDir) await syncDirectory(dirname(path));
}

/**
 * Creates `path` holding `value` as JSON only if nothing is there: true when this call created
 * it, false when it existed. The file appears whole, never half written.
 */
export async function createJsonExclusive(path: string, value: unknown, opts: { tmpDir: string }): Promise<boolean> {
  const tmp = await writeTemporary(opts.tmpDir, serialize(value));
  try {
    await link(tmp, path);
    await syncDirectory(dirname(path));
    return true;
  } catch (error) {
    if (isErrno(error, "EEXIST")) return false;
    // Over NFS a link can succeed while its reply is lost: the temporary file then has two names.
    const links = await stat(tmp).then(
      (s) => s.nlink,
      () => 0,
    );
    if (links === 2) return true;
    throw error;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

/** A JSON file's value: `missing` when there is no file, `unreadable` when it does not parse. */
export type JsonRead = { found: true; value: unknown } | { found: false; why: "missing" | "unreadable" };

export async function readJson(path: string): Promise<JsonRead> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (isErrno(error, "ENOENT", "ENOTDIR")) return { found: false, why: "missing" };
    throw error;
  }
  try {
    return { found: true, value: JSON.parse(text) as unknown };
  } catch {
    return { found: false, why: "unreadable" };
  }
}

/** Removes a file; one that is already gone is fine. */
export async function removeFile(path: string): Promise<void> {
  await unlink(path).catch((error: unknown) => {
    if (!isErrno(error, "ENOENT")) throw error;
  });
}

/** Renames `from` to `to`: false when `from` is not there (someone else moved it first). */
export async function moveIfPresent(from: string, to: string): Promise<boolean> {
  try {
    await rename(from, to);
    return true;
  } catch (error) {
    if (isErrno(error, "ENOENT")) return false;
    throw error;
  }
}

/** Puts a file moved aside back at `path`, unless something else is there now: true when it went back. */
export async function putBack(aside: string, path: string): Promise<boolean> {
  try {
    await link(aside, path);
  } catch (error) {
    if (isErrno(error, "EEXIST")) return false;
    throw error;
  }
  await unlink(aside).catch(() => undefined);
  return true;
}

export async function ensureDirectories(...dirs: string[]): Promise<void> {
  for (const dir of dirs) await mkdir(dir, { recursive: true });
}
