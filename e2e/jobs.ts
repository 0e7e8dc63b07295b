// What the job specs share: real git for fixture checkouts, and an agent's calls to the job API
// (a failed call fails the test with the procedure's name and status).
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect, type APIRequestContext } from "@playwright/test";
import { callTrpc } from "./fixtures.ts";

export function git(cwd: string, args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "e2e",
      GIT_AUTHOR_EMAIL: "e2e@example.invalid",
      GIT_COMMITTER_NAME: "e2e",
      GIT_COMMITTER_EMAIL: "e2e@example.invalid",
    },
  });
}

/** A checkout at `dir` with one commit, an uncommitted change and an untracked file. */
export function dirtyCheckout(dir: string): string {
  mkdirSync(path.join(dir, "src"), { recursive: true });
  git(dir, ["init", "--quiet", "--initial-branch=main"]);
  writeFileSync(path.join(dir, "README.md"), "# e2e\n");
  writeFileSync(path.join(dir, "src", "main.txt"), "one\ntwo\n");
  git(dir, ["add", "-A"]);
  git(dir, ["commit", "--quiet", "-m", "first"]);
  writeFileSync(path.join(dir, "src", "main.txt"), "one\ntwo\nthree (uncommitted)\n");
  writeFileSync(path.join(dir, "notes.txt"), "untracked notes\n");
  return dir;
}

export interface JobView {
  id: string;
  state: string;
  attempts: number;
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
}

export async function call(agent: APIRequestContext, procedure: string, input: unknown, kind: "query" | "mutation") {
  const { status, result, error } = await callTrpc(agent, procedure, input, kind);
  expect(error, `${procedure} answered ${status}`).toBeUndefined();
  return result;
}

/** Follows a job until it ends; its progress moves through the worker's steps meanwhile. */
export async function finished(agent: APIRequestContext, jobId: string, timeout = 60_000): Promise<JobView> {
  let job: JobView | null = null;
  await expect
    .poll(
      async () => {
        job = (await call(agent, "job.get", { jobId }, "query")) as JobView;
        return ["completed", "failed", "cancelled"].includes(job.state);
      },
      { timeout, intervals: [100] },
    )
    .toBe(true);
  return job!;
}
