// bench:acquire's view of the machine under each measured load, so a latency row can be read
// against what the machine itself did meanwhile (a shared 2-core VM steals CPU and stalls its
// disk). Two figures per load:
// - steal: the share of CPU time the hypervisor gave to other guests (/proc/stat), which no code
//   here can win back;
// - the disk's commit latency: a child process writes 8 KiB and fdatasyncs it every 10 ms
//   (bench:acquire --disk-probe-ms), as PostgreSQL's WAL flush does at each commit, on the same
//   file system, and reports the p99 and the worst. A stall of the disk delays every commit in flight: a closed loop of 16 clients
//   feels it in 16 acquires (under 1% of the run, below its p99), a paced load in every acquire
//   that falls due during it.
// The probe runs in its own process so the bench's event loop never waits on the disk.
import { fork, type ChildProcess } from "node:child_process";
import { closeSync, fdatasyncSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

export interface MachineFigures {
  /** Percent of all CPU time stolen by the hypervisor during the load; null off Linux. */
  stealPercent: number | null;
  /** The probe's fdatasync latency in ms during the load; null when the disk is not probed. */
  fsync: { p99: number; max: number } | null;
}

interface CpuTimes {
  steal: number;
  total: number;
}

function cpuTimes(): CpuTimes | null {
  try {
    const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    const total = fields.slice(0, 8).reduce((sum, v) => sum + v, 0);
    return { steal: fields[7] ?? 0, total };
  } catch {
    return null;
  }
}

type ProbeReply = { p99: number; max: number } | null;

/**
 * The probe process: started once, asked for its figures (and reset) at the end of each load.
 * It fdatasyncs every `fsyncEveryMs` (0: never, the disk is not probed). The probe's flushes
 * share the disk with PostgreSQL's, so they are part of what they measure.
 */
export async function startMachineProbe(fsyncEveryMs: number): Promise<{
  /** Marks the start of a load. */
  begin(): Promise<void>;
  /** The machine's figures since begin(). */
  end(): Promise<MachineFigures>;
  close(): Promise<void>;
}> {
  const child: ChildProcess = fork(new URL(import.meta.url), ["--probe", String(fsyncEveryMs)], {
    stdio: "inherit",
  });
  const ask = () =>
    new Promise<ProbeReply>((resolve) => {
      child.once("message", (reply: ProbeReply) => resolve(reply));
      child.send("report");
    });
  await ask();
  let cpuBefore: CpuTimes | null = null;
  return {
    async begin() {
      await ask();
      cpuBefore = cpuTimes();
    },
    async end() {
      const figures = await ask();
      const cpuAfter = cpuTimes();
      const stealPercent =
        cpuBefore && cpuAfter && cpuAfter.total > cpuBefore.total
          ? (100 * (cpuAfter.steal - cpuBefore.steal)) / (cpuAfter.total - cpuBefore.total)
          : null;
      return { stealPercent, fsync: figures };
    },
    async close() {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.send("exit");
      await exited;
    },
  };
}

/**
 * In the probe process: fdatasync 8 KiB every `everyMs` (if above 0), and answer each "report"
 * with the figures since the last. It ends when asked, or when the bench that forked it is gone
 * (a bench that crashed must not leave a process flushing the disk under the next one).
 */
function probe(everyMs: number): void {
  const file = join(tmpdir(), `strata-bench-fsync-${process.pid}`);
  const fd = openSync(file, "w");
  const page = Buffer.alloc(8192, 1);
  let latencies: number[] = [];
  const tick =
    everyMs > 0
      ? setInterval(() => {
          const t0 = performance.now();
          writeSync(fd, page, 0, page.length, 0);
          fdatasyncSync(fd);
          latencies.push(performance.now() - t0);
        }, everyMs)
      : undefined;
  const stop = () => {
    clearInterval(tick);
    closeSync(fd);
    rmSync(file, { force: true });
  };
  process.once("disconnect", () => {
    stop();
    process.exit(0);
  });
  process.on("message", (message) => {
    if (message === "exit") {
      process.disconnect();
      return;
    }
    const sorted = latencies.sort((a, b) => a - b);
    const p99 = sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)]! : 0;
    process.send!((everyMs > 0 ? { p99, max: sorted.at(-1) ?? 0 } : null) satisfies ProbeReply);
    latencies = [];
  });
}

const probeArg = process.argv.indexOf("--probe");
if (probeArg >= 0) probe(Number(process.argv[probeArg + 1]));
