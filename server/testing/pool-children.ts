// Test support: drives pool-process.ts children (each a real process with its own pid, start
// time and, if asked, a clock days off) one JSON request at a time, and suspends and resumes
// them with SIGSTOP / SIGCONT.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { LeaseTimings } from "../worktrees/lease.ts";

const CHILD = fileURLToPath(new URL("./pool-process.ts", import.meta.url));

export interface PoolChild {
  pid: number;
  startTime: string | null;
  /** Sends one request and resolves with the answer (requests are answered in order). */
  send<T = Record<string, unknown>>(request: Record<string, unknown>): Promise<T>;
  suspend(): void;
  resume(): void;
  kill(): Promise<void>;
}

const children = new Set<ChildProcess>();

/** Kills every child still running (call in afterAll/afterEach). */
export function killPoolChildren(): void {
  for (const child of children) {
    child.kill("SIGCONT");
    child.kill("SIGKILL");
  }
  children.clear();
}

export async function startPoolChild(args: {
  dir: string;
  host?: string;
  skewMs?: number;
  timings?: Partial<LeaseTimings>;
}): Promise<PoolChild> {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, JSON.stringify(args)], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const waiting: Array<{ resolve: (v: unknown) => void; reject: (e: Error) => void }> = [];
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  child.on("exit", (code, signal) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`pool child exited (${code ?? signal}): ${stderr}`));
  });
  createInterface({ input: child.stdout! }).on("line", (line) => waiting.shift()?.resolve(JSON.parse(line)));
  const next = () => new Promise<unknown>((resolve, reject) => waiting.push({ resolve, reject }));

  const ready = (await next()) as { pid: number; startTime: string | null };
  return {
    pid: ready.pid,
    startTime: ready.startTime,
    async send<T>(request: Record<string, unknown>) {
      const answer = next();
      child.stdin!.write(`${JSON.stringify(request)}\n`);
      const value = (await answer) as T & { failed?: string };
      if (value.failed) throw new Error(`pool child failed: ${value.failed}`);
      return value;
    },
    suspend: () => void child.kill("SIGSTOP"),
    resume: () => void child.kill("SIGCONT"),
    async kill() {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await exited;
      children.delete(child);
    },
  };
}
