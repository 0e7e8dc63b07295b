// The clock of the filesystem that holds the pool. Hosts sharing a pool over a network
// filesystem may disagree about the time by minutes or days; the filesystem stamps every file it
// writes with its own time, so that is the one clock they can all read. A process writes a
// short-lived `.clock-*.probe` file, reads the modification time the filesystem gave it, and
// keeps the difference to its own clock: every stamp it writes and every age it judges is then
// in the filesystem's time, whatever its own clock says.
import { randomUUID } from "node:crypto";
import { open, unlink } from "node:fs/promises";
import { join } from "node:path";

export interface FsClock {
  /** Milliseconds since the epoch on the filesystem's clock. */
  now(): Promise<number>;
  /** How far the filesystem's clock runs ahead of this process's, in ms (negative: behind). */
  offset(): Promise<number>;
}

export interface FsClockOptions {
  /** This process's clock (Date.now by default; tests give one that runs days off). */
  localNow?: () => number;
  /** Probe again after this long on the local clock (a local clock may be stepped). */
  reprobeMs?: number;
  /** Part of the probe file's name, so a leftover says who wrote it. */
  label?: string;
}

const PROBE_PREFIX = ".clock-";
const PROBE_SUFFIX = ".probe";
const DEFAULT_REPROBE_MS = 60_000;

/** Whether a file name is a clock probe (a leftover one is removed by prunePool). */
export function isProbeFile(name: string): boolean {
  return name.startsWith(PROBE_PREFIX) && name.endsWith(PROBE_SUFFIX);
}

/**
 * Measures the filesystem's clock against `localNow` once: the probe's modification time is
 * the filesystem's time at some moment of the write, taken as the middle of it.
 */
async function probe(dir: string, localNow: () => number, label: string): Promise<number> {
  const file = join(dir, `${PROBE_PREFIX}${label}-${randomUUID()}${PROBE_SUFFIX}`);
  const before = localNow();
  const handle = await open(file, "wx");
  let mtimeMs: number;
  try {
    await handle.writeFile("probe\n");
    // Over NFS the data and its time reach the server on sync; the stat after it is the server's.
    await handle.sync();
    mtimeMs = (await handle.stat()).mtimeMs;
  } finally {
    await handle.close();
    await unlink(file).catch(() => undefined);
  }
  const after = localNow();
  return mtimeMs - (before + after) / 2;
}

/** The clock of the filesystem holding `dir` (which must exist and be writable). */
export function filesystemClock(dir: string, opts: FsClockOptions = {}): FsClock {
  const localNow = opts.localNow ?? Date.now;
  const reprobeMs = opts.reprobeMs ?? DEFAULT_REPROBE_MS;
  const label = (opts.label ?? String(process.pid)).replace(/[^A-Za-z0-9._-]/g, "-");
  let measured: { offset: number; at: number } | null = null;
  let pending: Promise<number> | null = null;

  const offset = async (): Promise<number> => {
    const now = localNow();
    if (measured && now >= measured.at && now - measured.at < reprobeMs) return measured.offset;
    pending ??= probe(dir, localNow, label)
      .then((value) => {
        measured = { offset: value, at: localNow() };
        return value;
      })
      .finally(() => {
        pending = null;
      });
    return pending;
  };
  return {
    offset,
    async now() {
      const off = await offset();
      return Math.round(localNow() + off);
    },
  };
}

/**
 * `clock` moved `aheadMs()` forward: how a test lets minutes of lease time pass without
 * waiting for them. Production pools never use it.
 */
export function advancedClock(clock: FsClock, aheadMs: () => number): FsClock {
  return {
    async offset() {
      return (await clock.offset()) + aheadMs();
    },
    async now() {
      return (await clock.now()) + aheadMs();
    },
  };
}
