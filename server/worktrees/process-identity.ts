// Which process holds a lease or a lock, told well enough that another process can judge whether
// it still runs. On Linux a pid is paired with its start time (/proc/<pid>/stat, field 22) and
// the boot it belongs to, so a later process that got the same pid (after a reboot, a container
// restart, or simply wrap-around) is never taken for the holder. Where that cannot be read the
// pid alone is all there is, and lease.ts caps how long it may keep anything. The job queue's
// claims (server/jobs/worker-identity.ts) name their worker by the same identity.
import { readFile, readlink } from "node:fs/promises";
import { hostname } from "node:os";
import { z } from "zod";
import { hostNameOfMachine } from "../domain/text.ts";
import { processAlive, processStartTime } from "../git/process-start.ts";

export const processIdentitySchema = z.strictObject({
  /** The host name the process ran on (STRATA_HOST, else the machine's name). */
  host: z.string().min(1).max(300),
  /** Linux's boot id: a pid means nothing across a reboot. */
  bootId: z.string().max(100).nullable(),
  /** The pid namespace: containers on one machine share the boot id but not their pids. */
  pidNamespace: z.string().max(100).nullable(),
  pid: z.number().int().positive(),
  /** Clock ticks after boot at which the process started (Linux); null where it cannot be read. */
  startTime: z.string().max(40).nullable(),
});
export type ProcessIdentity = z.infer<typeof processIdentitySchema>;

async function readTrimmed(file: string): Promise<string | null> {
  try {
    return (await readFile(file, "utf8")).trim() || null;
  } catch {
    return null;
  }
}

/** This process, as a lease or lock names its holder (callers pass STRATA_HOST when set). */
export function currentProcess(host: string = hostNameOfMachine(hostname())): Promise<ProcessIdentity> {
  return processOnThisMachine(process.pid, host);
}

/** A process of this machine (one that should hold a worktree after this one exits), as a lease names it. */
export async function processOnThisMachine(
  pid: number,
  host: string = hostNameOfMachine(hostname()),
): Promise<ProcessIdentity> {
  const [bootId, pidNamespace, startTime] = await Promise.all([
    readTrimmed("/proc/sys/kernel/random/boot_id"),
    readlink(`/proc/${pid === process.pid ? "self" : pid}/ns/pid`).catch(() => null),
    processStartTime(pid),
  ]);
  return { host, bootId, pidNamespace, pid, startTime };
}

/** Whether `me` can see `other`'s process table: the same host, boot and pid namespace. */
function sameMachine(other: ProcessIdentity, me: ProcessIdentity): boolean {
  return other.host === me.host && other.bootId === me.bootId && other.pidNamespace === me.pidNamespace;
}

/**
 * Whether the process `holder` names still runs, as far as `me` can tell:
 * - `running`: the same pid with the same start time (Linux);
 * - `running-unverified`: a live process with that pid, whose start time cannot be compared;
 * - `gone`: no such process, or another one with that pid;
 * - `elsewhere`: it ran on another machine (or boot, or pid namespace), nothing can be seen.
 */
export async function holderRuns(
  holder: ProcessIdentity,
  me: ProcessIdentity,
): Promise<"running" | "running-unverified" | "gone" | "elsewhere"> {
  if (!sameMachine(holder, me)) return "elsewhere";
  if (!processAlive(holder.pid)) return "gone";
  if (holder.startTime === null) return "running-unverified";
  const now = await processStartTime(holder.pid);
  if (now === null) return "running-unverified";
  return now === holder.startTime ? "running" : "gone";
}

/**
 * Whether the process `holder` names has certainly stopped, judged from `me` on the same host: the
 * machine rebooted since (another boot id), or, with the same boot and pid namespace both known,
 * `holderRuns` finds it gone. Anything that cannot be told is "not known gone".
 */
export async function holderIsGone(holder: ProcessIdentity, me: ProcessIdentity): Promise<boolean> {
  if (holder.host !== me.host) return false;
  if (holder.bootId && me.bootId && holder.bootId !== me.bootId) return true;
  if (!holder.bootId || !holder.pidNamespace) return false;
  return (await holderRuns(holder, me)) === "gone";
}
