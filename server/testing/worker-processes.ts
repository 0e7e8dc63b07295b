// Test support: real `strata worker` processes (node cli/strata.mjs worker --host X) on a test
// catalog, and waiting for what they do. Every worker started here is killed when
// `killWorkers` runs (call it in the test file's afterAll).
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const STRATA = fileURLToPath(new URL("../../cli/strata.mjs", import.meta.url));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `fn` every 100 ms until it gives a value; throws after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

export interface WorkerChild {
  child: ChildProcess;
  /** Everything it wrote on stderr so far. */
  stderr: () => string;
  exited: Promise<number | null>;
}

const started: WorkerChild[] = [];

/** A worker of `host` on the catalog at `url`, polling every 50 ms, with no sweeps or collections. */
export function startWorker(url: string, host: string, dataDir: string, env: Record<string, string> = {}): WorkerChild {
  const child = spawn(process.execPath, [STRATA, "worker", "--host", host, "--poll-ms", "50"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      ...process.env,
      DATABASE_URL: url,
      STRATA_DATA_DIR: dataDir,
      STRATA_SWEEP_INTERVAL_SECONDS: "0",
      STRATA_GC_INTERVAL_SECONDS: "0",
      ...env,
    },
  });
  let err = "";
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const worker = { child, stderr: () => err, exited };
  started.push(worker);
  return worker;
}

export async function killHard(worker: WorkerChild): Promise<void> {
  worker.child.kill("SIGKILL");
  await worker.exited;
}

export async function stopGently(worker: WorkerChild): Promise<void> {
  worker.child.kill("SIGTERM");
  await worker.exited;
}

/** Kills every worker this process started that still runs. */
export function killWorkers(): void {
  for (const w of started) if (w.child.exitCode === null) w.child.kill("SIGKILL");
}
