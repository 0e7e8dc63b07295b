// The sweeper's windows. Settings, not constants, so operators and tests can change them.

const DAY_MS = 24 * 60 * 60 * 1000;

export interface SweepSettings {
  /** A checkpoint head neither captured nor restored for this long is retired (stale). */
  staleAfterMs: number;
  /** Superseded, retired and failed snapshots are kept this long, then handed to GC. */
  retentionMs: number;
}

export const DEFAULT_SWEEP_SETTINGS: SweepSettings = {
  staleAfterMs: 14 * DAY_MS,
  retentionMs: 7 * DAY_MS,
};

export function staleCutoff(now: Date, settings: SweepSettings): Date {
  return new Date(now.getTime() - settings.staleAfterMs);
}

export function retentionCutoff(now: Date, settings: SweepSettings): Date {
  return new Date(now.getTime() - settings.retentionMs);
}

/** Whether a ready checkpoint head has gone stale: its last capture and last restore are both old. */
export function isStaleHead(
  head: { readyAt: Date | null; lastRestoredAt: Date | null },
  now: Date,
  settings: SweepSettings,
): boolean {
  const cutoff = staleCutoff(now, settings).getTime();
  const captured = head.readyAt?.getTime() ?? Number.NEGATIVE_INFINITY;
  const restored = head.lastRestoredAt?.getTime() ?? Number.NEGATIVE_INFINITY;
  return Math.max(captured, restored) < cutoff;
}

/** The states whose snapshots wait out the retention window, and the column that dates them. */
export const RETENTION_CLOCKS = {
  superseded: "supersededAt",
  retired: "retiredAt",
  failed: "failedAt",
} as const;
