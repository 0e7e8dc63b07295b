// How deep the queue is, by host and kind, for the app's /metrics (server/log/metrics.ts reads it
// at scrape time): jobs waiting (created or retry), jobs running, and the oldest waiting job's
// creation time. One grouped query; the jobs_claim_idx index leads with host and state.
import type { Db } from "../db/handle.ts";

/** One host and kind's open jobs. `host` is null for maintenance jobs (any worker may run them). */
export interface QueueDepth {
  host: string | null;
  kind: string;
  waiting: number;
  active: number;
  /** When the oldest waiting job was enqueued; null when none waits. */
  oldestWaitingSince: Date | null;
}

const WAITING = new Set(["created", "retry"]);

/** The open jobs of the catalog, grouped by host and kind. */
export async function readQueueDepth(db: Db): Promise<QueueDepth[]> {
  const groups = await db.job.groupBy({
    by: ["host", "kind", "state"],
    where: { state: { in: ["created", "retry", "active"] } },
    _count: { _all: true },
    _min: { createdAt: true },
  });
  const depths = new Map<string, QueueDepth>();
  for (const group of groups) {
    const key = `${group.host ?? ""}\u0000${group.kind}`;
    let depth = depths.get(key);
    if (!depth) {
      depth = { host: group.host, kind: group.kind, waiting: 0, active: 0, oldestWaitingSince: null };
      depths.set(key, depth);
    }
    if (!WAITING.has(group.state)) {
      depth.active += group._count._all;
      continue;
    }
    depth.waiting += group._count._all;
    const since = group._min.createdAt;
    if (since && (!depth.oldestWaitingSince || since < depth.oldestWaitingSince)) depth.oldestWaitingSince = since;
  }
  return [...depths.values()];
}
