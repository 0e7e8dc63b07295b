// Where a restore builds: a staging directory next to the target, moved into place only once
// verified, so a target never holds an unverified worktree. Each staging directory has a crash
// record in the host's state directory; a restore killed midway leaves both behind, and the
// next restore on that host removes them once the process that wrote the record is gone.
import { randomUUID } from "node:crypto";
import { lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { StrataError } from "../../domain/errors.ts";
import type { RestoreWarning } from "../../domain/restore-result.ts";
import { processAlive, processStartTime } from "../../git/process-start.ts";

const STAGING_PREFIX = ".strata-staging-";
const RECORDS = "restores";

function unsafe(target: string, why: string): StrataError {
  return new StrataError("UNSAFE_TARGET", `Refusing to restore into ${JSON.stringify(target)}: ${why}.`, {
    hint: "Restore into a new or empty directory; a restore never writes into existing files.",
    data: { target, why },
  });
}

/**
 * Checks that `into` is new or an empty directory (a symbolic link is refused) and returns its
 * absolute path. Reads only.
 */
export async function checkTarget(into: string): Promise<string> {
  const target = resolve(into);
  let st;
  try {
    st = await lstat(target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return target;
    if (code === "ENOTDIR") throw unsafe(target, "a parent is not a directory");
    throw unsafe(target, `it cannot be read (${code ?? "error"})`);
  }
  if (st.isSymbolicLink()) throw unsafe(target, "it is a symbolic link");
  if (!st.isDirectory()) throw unsafe(target, "it is a file");
  const entries = await readdir(target);
  if (entries.length > 0) throw unsafe(target, "the directory is not empty");
  return target;
}

interface CrashRecord {
  version: 1;
  host: string;
  pid: number;
  /** The process's start time (Linux /proc), so a reused pid is not mistaken for the writer. */
  pidStart: string | null;
  staging: string;
  target: string;
  startedAt: string;
}

async function writerGone(record: CrashRecord): Promise<boolean> {
  if (!processAlive(record.pid)) return true;
  if (record.pidStart === null) return false;
  const start = await processStartTime(record.pid);
  return start !== null && start !== record.pidStart;
}

function isCrashRecord(value: unknown): value is CrashRecord {
  const r = value as Partial<CrashRecord> | null;
  return (
    r !== null &&
    typeof r === "object" &&
    r.version === 1 &&
    typeof r.host === "string" &&
    typeof r.pid === "number" &&
    typeof r.staging === "string" &&
    typeof r.target === "string"
  );
}

/**
 * Removes the staging directories of interrupted restores on this host whose process is gone,
 * with their crash records. Returns a warning for each leftover that could not be removed.
 */
export async function removeStaleRestores(stateDir: string): Promise<RestoreWarning[]> {
  const dir = join(stateDir, RECORDS);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    return [{ kind: "stale-restore-retained", message: `The crash-record directory ${dir} cannot be read.` }];
  }
  const warnings: RestoreWarning[] = [];
  const me = hostname();
  for (const name of names.filter((n) => n.endsWith(".json"))) {
    const file = join(dir, name);
    let record: unknown;
    try {
      record = JSON.parse(await readFile(file, "utf8"));
    } catch {
      warnings.push({ kind: "stale-restore-retained", message: `The crash record ${file} cannot be read.` });
      continue;
    }
    if (!isCrashRecord(record) || record.host !== me || !(await writerGone(record))) continue;
    // Only ever a directory this code named: a record must not make us delete anything else.
    if (!basename(record.staging).startsWith(STAGING_PREFIX)) {
      warnings.push({ kind: "stale-restore-retained", message: `The crash record ${file} names an unknown path.` });
      continue;
    }
    try {
      await rm(record.staging, { recursive: true, force: true });
      await unlink(file);
    } catch (error) {
      warnings.push({
        kind: "stale-restore-retained",
        message: `The staging directory ${record.staging} of an interrupted restore could not be removed (${(error as Error).message}).`,
        paths: [record.staging],
      });
    }
  }
  return warnings;
}

export interface Staging {
  /** The directory being built. */
  dir: string;
  target: string;
  /** Moves the verified worktree into place and drops the crash record. */
  publish(): Promise<void>;
  /** Removes the staging directory and the crash record (after a failure, or nothing to write). */
  discard(): Promise<void>;
}

/** Creates the staging directory next to `target` (making the target's parent if needed). */
export async function createStaging(target: string, stateDir: string): Promise<Staging> {
  const parent = dirname(target);
  await mkdir(parent, { recursive: true });
  const recordsDir = join(stateDir, RECORDS);
  await mkdir(recordsDir, { recursive: true });
  const recordFile = join(recordsDir, `${randomUUID()}.json`);
  const dir = await mkdtemp(join(parent, `${STAGING_PREFIX}${basename(target).slice(0, 40)}-`));
  const record: CrashRecord = {
    version: 1,
    host: hostname(),
    pid: process.pid,
    pidStart: await processStartTime(process.pid),
    staging: dir,
    target,
    startedAt: new Date().toISOString(),
  };
  try {
    await writeFile(recordFile, JSON.stringify(record), { flag: "wx" });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const dropRecord = () => unlink(recordFile).catch(() => undefined);
  return {
    dir,
    target,
    async publish() {
      try {
        // rename(2) replaces an empty directory and refuses a non-empty one.
        await rename(dir, target);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOTEMPTY" || code === "EEXIST" || code === "ENOTDIR" || code === "EISDIR") {
          throw unsafe(target, "something was written there during the restore");
        }
        throw error;
      }
      await dropRecord();
    },
    async discard() {
      await rm(dir, { recursive: true, force: true });
      await dropRecord();
    },
  };
}
