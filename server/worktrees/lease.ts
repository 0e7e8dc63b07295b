// Leases: how a process holds a pooled worktree (and, the same way, a per-worktree lock). The
// holder refreshes a heartbeat file every 10 s; a lease is stale 30 s after its last refresh
// and free 60 s after that, 90 s in all, every age measured on the pool filesystem's clock
// (fs-clock.ts). On the holder's own machine a process that still runs keeps what it holds
// however long it was suspended; where its start time cannot be compared, for 24 h at most.
//
// A heartbeat file belongs to one take (its token). A holder suspended past its lease only ever
// rewrites its own token's file, which nobody reads once another process took the worktree.
import { z } from "zod";
import type { FsClock } from "./fs-clock.ts";
import { removeFile, writeJsonAtomic } from "./pool-files.ts";
import { holderRuns, type ProcessIdentity } from "./process-identity.ts";

export interface LeaseTimings {
  /** How often a holder refreshes. */
  refreshMs: number;
  /** A lease (or lock) is stale this long after its last refresh. */
  staleMs: number;
  /** A stale lease frees its worktree this long after it became stale. */
  graceMs: number;
  /** How long a live pid keeps a lease without refreshing when its start time cannot be compared. */
  unverifiedKeepMs: number;
}

export const DEFAULT_LEASE_TIMINGS: LeaseTimings = {
  refreshMs: 10_000,
  staleMs: 30_000,
  graceMs: 60_000,
  unverifiedKeepMs: 24 * 60 * 60 * 1000,
};

/** `held`: its holder keeps it; `stale`: not refreshed lately but not free yet; `free`: anyone may take it. */
export type LeaseState = "held" | "stale" | "free";

export const heartbeatSchema = z.strictObject({
  token: z.string().min(1).max(100),
  /** The last refresh, on the pool filesystem's clock (ms since the epoch). */
  refreshedAt: z.number().finite(),
});
type HeartbeatRecord = z.infer<typeof heartbeatSchema>;

export interface LeaseJudgement {
  state: LeaseState;
  /** Since the last refresh, on the filesystem's clock (0 when the stamp is ahead of it). */
  ageMs: number;
  /** A process this machine sees running keeps it, whatever its age. */
  keptByProcess: boolean;
}

/** How a lease last refreshed at `refreshedAt` by `holder` stands at `now`, as `me` sees it. */
export async function judgeLease(
  lease: { refreshedAt: number; holder: ProcessIdentity },
  ctx: { now: number; me: ProcessIdentity; timings: LeaseTimings },
): Promise<LeaseJudgement> {
  const ageMs = Math.max(0, ctx.now - lease.refreshedAt);
  const { staleMs, graceMs, unverifiedKeepMs } = ctx.timings;
  if (ageMs < staleMs) return { state: "held", ageMs, keptByProcess: false };
  const runs = await holderRuns(lease.holder, ctx.me);
  if (runs === "running" || (runs === "running-unverified" && ageMs < unverifiedKeepMs)) {
    return { state: "held", ageMs, keptByProcess: true };
  }
  return { state: ageMs < staleMs + graceMs ? "stale" : "free", ageMs, keptByProcess: false };
}

export interface Heartbeat {
  readonly token: string;
  /** Set once the holder found that what it held is no longer its own. */
  readonly lost: boolean;
  /** The last refresh this holder wrote, on the filesystem's clock. */
  readonly refreshedAt: number;
  /**
   * Writes a fresh heartbeat, then checks that what it holds is still its own: true only when
   * that is confirmed; when it is not its own any more, the heartbeat also stops for good.
   */
  refresh(): Promise<boolean>;
  /** Stops refreshing; what it held then ages out, unless released. */
  stop(): void;
}

export interface HeartbeatOptions {
  file: string;
  token: string;
  tmpDir: string;
  clock: FsClock;
  timings: LeaseTimings;
  /** When the taker wrote the first heartbeat (or the record standing for it). */
  refreshedAt: number;
  /** Whether what the heartbeat keeps alive is still this holder's: `unknown` retries later. */
  stillMine: () => Promise<boolean | "unknown">;
  onLost?: () => void;
}

export async function writeHeartbeat(file: string, beat: HeartbeatRecord, tmpDir: string): Promise<void> {
  await writeJsonAtomic(file, beat, { tmpDir });
}

/** Refreshes `file` every `timings.refreshMs` until stopped or lost (the timer never keeps a process alive). */
export function startHeartbeat(opts: HeartbeatOptions): Heartbeat {
  let lost = false;
  let stopped = false;
  let refreshedAt = opts.refreshedAt;
  let running: Promise<boolean> | null = null;

  const markLost = async () => {
    lost = true;
    stop();
    await removeFile(opts.file).catch(() => undefined);
    opts.onLost?.();
  };
  const refreshOnce = async (): Promise<boolean> => {
    if (lost) return false;
    if (!stopped) {
      const now = await opts.clock.now();
      await writeHeartbeat(opts.file, { token: opts.token, refreshedAt: now }, opts.tmpDir);
      refreshedAt = now;
    }
    const mine = await opts.stillMine();
    if (mine === false) await markLost();
    // `unknown` (a record that cannot be read now) is not a loss, but not a confirmation either.
    return mine === true;
  };
  const refresh = () => {
    running ??= refreshOnce().finally(() => {
      running = null;
    });
    return running;
  };
  const timer = setInterval(() => {
    // A failed refresh (a full disk, an unreachable server) is retried on the next tick; if
    // they keep failing the lease ages out, and the holder learns it from stillHeld().
    if (!running) refresh().catch(() => undefined);
  }, opts.timings.refreshMs);
  timer.unref();
  function stop() {
    stopped = true;
    clearInterval(timer);
  }
  return {
    token: opts.token,
    get lost() {
      return lost;
    },
    get refreshedAt() {
      return refreshedAt;
    },
    refresh,
    stop,
  };
}
