// Who holds a claim: a worker names its process in the job's `claimedBy`, so that a worker
// starting later on the same host can tell a dead holder from a live one without waiting for
// the lease. The format (docs/workers.md, "Claims") is six fields joined by `|`:
//
//   host|pid|start|boot|pidns|nonce
//
//   host   the worker's host name (hostNameSchema: never contains `|`)
//   pid    the worker's process id
//   start  the process's start time (/proc/<pid>/stat field 22; empty where unknown)
//   boot   the kernel's boot id (/proc/sys/kernel/random/boot_id; empty where unknown)
//   pidns  the pid namespace (/proc/self/ns/pid; empty where unknown): a pid means nothing
//          across namespaces (two containers of one host name), so only a holder in the same
//          namespace is judged by its pid
//   nonce  random, so that every worker start claims under a new name
//
// Claims in any other form (an earlier release wrote `host:pid:random`) are never judged dead
// from here: the lease alone bounds them.
import { randomUUID } from "node:crypto";
import { currentProcess, holderIsGone as processIsGone, type ProcessIdentity } from "../worktrees/process-identity.ts";

export interface WorkerIdentity {
  host: string;
  pid: number;
  start: string | null;
  boot: string | null;
  pidns: string | null;
  nonce: string;
}

/** The identity of this process as a worker of `host`, with a fresh nonce. */
export async function currentWorkerIdentity(host: string): Promise<WorkerIdentity> {
  const me = await currentProcess(host);
  return {
    host,
    pid: me.pid,
    start: me.startTime,
    boot: me.bootId,
    // "pid:[4026531836]": keep the number only, so the field holds no separator.
    pidns: me.pidNamespace?.replace(/\D/g, "") || null,
    nonce: randomUUID().slice(0, 8),
  };
}

export function formatWorkerId(id: WorkerIdentity): string {
  return [id.host, String(id.pid), id.start ?? "", id.boot ?? "", id.pidns ?? "", id.nonce].join("|");
}

/** The identity a claim names, or null when it is not in this format. */
export function parseWorkerId(claimedBy: string): WorkerIdentity | null {
  const fields = claimedBy.split("|");
  if (fields.length !== 6) return null;
  const [host, pid, start, boot, pidns, nonce] = fields as [string, string, string, string, string, string];
  if (!host || !/^[1-9]\d{0,9}$/.test(pid) || !nonce) return null;
  return { host, pid: Number(pid), start: start || null, boot: boot || null, pidns: pidns || null, nonce };
}

/** The prefix every claim of a worker of `host` starts with (a `startsWith` filter). */
export function workerIdPrefix(host: string): string {
  return `${host}|`;
}

function asProcess(id: WorkerIdentity): ProcessIdentity {
  return { host: id.host, pid: id.pid, startTime: id.start, bootId: id.boot, pidNamespace: id.pidns };
}

/**
 * Whether the worker a claim names has certainly stopped, judged from `self` (a live worker of the
 * same host): process-identity.ts's `holderIsGone`. What cannot be told, the lease decides.
 */
export function holderIsGone(holder: WorkerIdentity, self: WorkerIdentity): Promise<boolean> {
  return processIsGone(asProcess(holder), asProcess(self));
}
