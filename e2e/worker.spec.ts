// The quick start's promise, end to end: one `strata serve` runs the dashboard, the API and a
// worker. An agent asks it over HTTP to capture a dirty checkout and then to restore that
// capture into a new directory; the worker inside the server does both, in the folders a worker
// uses when no roots are configured: the agent's own folder under the data directory's agents/,
// and restored/.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { DENIED_SECRET } from "./secrets.ts";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, test, request as requests, type APIRequestContext } from "@playwright/test";
import { call, dirtyCheckout, finished, git } from "./jobs.ts";

// As in playwright.config.ts.
const WORKER_URL = `http://127.0.0.1:${Number(process.env.E2E_PORT ?? 3210) + 1}`;
const WORKER_DATA_DIR = path.resolve(".strata-e2e-worker");
const AGENT = "e2e-worker-agent";
const WORKER_HOST = "e2e-worker-host";

test.describe("strata serve runs jobs with its own worker", () => {
  let work: string;
  let agent: APIRequestContext;

  test.beforeAll(async () => {
    const created = JSON.parse(
      execFileSync(process.execPath, ["cli/strata.mjs", "agent", "create", AGENT, "--json"], {
        encoding: "utf8",
        env: { ...process.env, STRATA_DATA_DIR: WORKER_DATA_DIR },
      }),
    ) as { token: string };
    agent = await requests.newContext({
      baseURL: WORKER_URL,
      extraHTTPHeaders: { Authorization: `Bearer ${created.token}` },
    });
    // The agent's own folder of the default agent root (the worker made agents/ when it started).
    mkdirSync(path.join(WORKER_DATA_DIR, "agents", AGENT), { recursive: true });
    work = mkdtempSync(path.join(WORKER_DATA_DIR, "agents", AGENT, "work-"));
  });

  test.afterAll(async () => {
    await agent?.dispose();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test("captures a dirty checkout, then restores it into a new directory", async () => {
    const repo = dirtyCheckout(path.join(work, "checkout"));
    // A secret the deny-list keeps out of the snapshot (and, e2e/log-check.ts checks, the logs).
    writeFileSync(path.join(repo, ".env"), `API_KEY=${DENIED_SECRET}\n`);

    const key = {
      repository: { identity: "example.invalid/e2e/worker" },
      backendKind: "local",
      baseImage: "e2e-image",
      workContextId: "e2e-worker-task",
    };
    const capture = (await call(agent, "job.enqueueCapture", { host: WORKER_HOST, dir: repo, key }, "mutation")) as {
      id: string;
    };
    const captured = await finished(agent, capture.id);
    expect(captured.error).toBeNull();
    expect(captured).toMatchObject({ state: "completed", result: { outcome: "appended" } });
    const snapshotId = captured.result!.snapshotId as string;

    const into = path.join(WORKER_DATA_DIR, "restored", path.basename(work));
    const { plan, job } = (await call(
      agent,
      "job.enqueueRestore",
      {
        repository: key.repository,
        backendKind: key.backendKind,
        baseImage: key.baseImage,
        canonicalRef: "refs/heads/main",
        workContextId: key.workContextId,
        workspace: into,
        host: WORKER_HOST,
      },
      "mutation",
    )) as { plan: { rung: string; snapshot: { id: string } | null }; job: { id: string } | null };
    expect(plan.rung).toBe("checkpoint");
    expect(plan.snapshot?.id).toBe(snapshotId);
    const restored = await finished(agent, job!.id);
    expect(restored.error).toBeNull();
    expect(restored).toMatchObject({ state: "completed", result: { outcome: "restored", path: into } });

    // The new directory holds the checkout as it was: the commit, the uncommitted change and
    // the untracked file, to the same tree.
    expect(readFileSync(path.join(into, "src", "main.txt"), "utf8")).toBe("one\ntwo\nthree (uncommitted)\n");
    expect(readFileSync(path.join(into, "notes.txt"), "utf8")).toBe("untracked notes\n");
    expect(git(into, ["rev-parse", "HEAD"])).toBe(git(repo, ["rev-parse", "HEAD"]));
    expect(git(into, ["branch", "--show-current"]).trim()).toBe("main");
    expect(existsSync(path.join(into, ".env"))).toBe(false);

    // Anything outside those folders is refused before the worker reads or writes it.
    const outside = dirtyCheckout(path.join(mkdtempSync(path.join(tmpdir(), "strata-e2e-outside-")), "checkout"));
    const refused = (await call(agent, "job.enqueueCapture", { host: WORKER_HOST, dir: outside, key }, "mutation")) as {
      id: string;
    };
    expect(await finished(agent, refused.id)).toMatchObject({ state: "failed", error: { code: "PATH_NOT_ALLOWED" } });
    rmSync(path.dirname(outside), { recursive: true, force: true });
  });
});
