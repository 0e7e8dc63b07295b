// The SDK as an agent harness uses it, against a real server (the app's handlers on a test
// catalog of each kind): publish a baseline, checkpoint a dirty checkout, acquire it into a new
// workspace, verify it, restore it again — written only with createStrataClient; and the
// example agent loop run as a harness would run it. Then its
// retries: a call made while the database is stopped (a private PostgreSQL cluster) is sent again
// until it answers; a refusal is never sent twice.
import { execFile } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openCatalog, type CatalogHandle } from "../server/db/client.ts";
import { migrate } from "../server/db/migrate.ts";
import { describeEachDatabase } from "../server/testing/databases.ts";
import { serveApp, type TestServer } from "../server/testing/http-server.ts";
import { makeAgent, uniqueName } from "../server/testing/lineage.ts";
import { startPrivatePostgres, type PrivatePostgres } from "../server/testing/private-postgres.ts";
import {
  addOrigin,
  git,
  initRepository,
  removeTemporaryDirectories,
  temporaryDirectory,
  write,
} from "../server/testing/repos.ts";
import { createStrataClient, isStrataError } from "./index.ts";

const EXAMPLE = fileURLToPath(new URL("../examples/agent-loop.mjs", import.meta.url));

afterAll(removeTemporaryDirectories);

describeEachDatabase("the SDK, end to end", (catalog) => {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await serveApp({ db: catalog().db });
  });
  afterAll(() => server?.close());

  it("publishes a baseline, checkpoints a dirty checkout, acquires, verifies and restores it", async () => {
    const { token } = await makeAgent(catalog().db);
    const strata = createStrataClient({ url: server!.url, token });
    const repository = `example.invalid/${uniqueName("sdk")}`;
    const context = uniqueName("task");
    const repo = initRepository({ "README.md": "# sdk\n", "src/app.txt": "one\n" });
    addOrigin(repo);

    const baseline = await strata.publishBaseline(repo, { repository });
    expect(baseline).toMatchObject({ outcome: "published", target: "baseline" });

    write(repo, "src/app.txt", "one\ntwo (uncommitted)\n");
    write(repo, "notes.txt", "untracked\n");
    const saved = await strata.checkpoint(repo, { repository, context });
    expect(saved).toMatchObject({ outcome: "appended", target: "checkpoint" });
    expect(await strata.checkpoint(repo, { repository, context })).toMatchObject({
      outcome: "unchanged",
      snapshotId: saved.snapshotId,
    });

    // The task resumes in a new workspace: its checkpoint, not the baseline.
    const into = join(temporaryDirectory("strata-sdk-"), "workspace");
    const acquired = await strata.acquire({ repository, context }, { into, dependencies: false });
    expect(acquired.workContextId).toBe(context);
    expect(acquired.path).toBe(into);
    const last = acquired.steps.at(-1)!;
    expect(last).toMatchObject({
      plan: { rung: "checkpoint", snapshot: { id: saved.snapshotId } },
      reported: "restored",
    });
    expect(readFileSync(join(into, "src/app.txt"), "utf8")).toBe("one\ntwo (uncommitted)\n");
    expect(readFileSync(join(into, "notes.txt"), "utf8")).toBe("untracked\n");
    expect(git(into, ["rev-parse", "HEAD"])).toBe(git(repo, ["rev-parse", "HEAD"]));

    expect(await strata.verify(into, saved.snapshotId)).toMatchObject({ matches: true });
    write(into, "notes.txt", "changed after the restore\n");
    const drifted = await strata.verify(into, saved.snapshotId);
    expect(drifted.matches).toBe(false);
    expect(drifted.drift.paths).toEqual([{ change: "modified", path: "notes.txt" }]);

    const again = join(temporaryDirectory("strata-sdk-"), "again");
    const restored = await strata.restore(saved.snapshotId, { into: again, dependencies: false });
    expect(restored.result.status).toBe("restored");
    expect(readFileSync(join(again, "src/app.txt"), "utf8")).toBe("one\ntwo (uncommitted)\n");

    // New work for the repository starts from the baseline.
    const fresh = join(temporaryDirectory("strata-sdk-"), "fresh");
    const started = await strata.acquire({ repository }, { into: fresh, dependencies: false });
    expect(started.steps.at(-1)!.plan).toMatchObject({ rung: "baseline", snapshot: { id: baseline.snapshotId } });
    expect(readFileSync(join(fresh, "src/app.txt"), "utf8")).toBe("one\n");
    expect(existsSync(join(fresh, "notes.txt"))).toBe(false);

    // Every agent procedure, typed: the agent sees its snapshot, and no other agent's.
    const listed = await strata.api.snapshot.list.query({});
    expect(listed.items.map((s) => s.id)).toEqual(expect.arrayContaining([saved.snapshotId, baseline.snapshotId]));
    const other = createStrataClient({ url: server!.url, token: (await makeAgent(catalog().db)).token });
    const hidden = await other.api.snapshot.get.query({ snapshotId: saved.snapshotId }).catch((e: unknown) => e);
    expect(isStrataError(hidden, "NOT_FOUND")).toBe(true);
  }, 180_000);

  it("resumes a task on this host: in place while the checkout is its snapshot, else into the pool", async () => {
    const { token } = await makeAgent(catalog().db);
    const strata = createStrataClient({ url: server!.url, token });
    const repository = `example.invalid/${uniqueName("resume")}`;
    const context = uniqueName("task");
    const repo = initRepository({ "README.md": "# resume\n" });
    addOrigin(repo);
    write(repo, "work.txt", "turn one\n");
    const saved = await strata.checkpoint(repo, { repository, context });
    const dataDir = temporaryDirectory("strata-sdk-data-");

    const here = await strata.resume({ context }, { dataDir });
    expect(here.checkouts).toMatchObject([{ snapshotId: saved.snapshotId, outcome: "in-place" }]);
    await here.release();

    // The checkout moved on (or is gone): the task's snapshot comes back in a pooled worktree.
    write(repo, "work.txt", "someone else's edit\n");
    const pooled = await strata.resume({ context }, { dataDir });
    const [checkout] = pooled.checkouts;
    expect(checkout).toMatchObject({ snapshotId: saved.snapshotId, outcome: "restored" });
    const restoredAt = checkout!.path ?? "";
    expect(restoredAt.startsWith(realpathSync(dataDir))).toBe(true);
    expect(readFileSync(join(restoredAt, "work.txt"), "utf8")).toBe("turn one\n");
    await pooled.release();
  }, 180_000);

  it("runs the example agent loop (examples/agent-loop.mjs) as it is written", async () => {
    const { token } = await makeAgent(catalog().db);
    const repo = initRepository({ "README.md": "# example\n" });
    write(repo, "draft.txt", "turn one\n");
    const into = join(temporaryDirectory("strata-sdk-example-"), "elsewhere");
    const context = uniqueName("example");
    // Asynchronously: the server answering it runs in this process.
    const run = await promisify(execFile)(process.execPath, [EXAMPLE, repo, context, into], {
      encoding: "utf8",
      env: {
        ...process.env,
        STRATA_SERVER_URL: server!.url,
        STRATA_TOKEN: token,
        STRATA_REPOSITORY: `example.invalid/${uniqueName("loop")}`,
      },
    });
    const steps = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(steps).toEqual([
      {
        step: "checkpoint",
        outcome: "appended",
        snapshotId: expect.any(String),
        head: git(repo, ["rev-parse", "HEAD"]).trim(),
      },
      { step: "acquire", rung: "checkpoint", snapshotId: steps[0]!.snapshotId, path: into, reported: "restored" },
      { step: "verify", matches: true },
    ]);
    expect(readFileSync(join(into, "draft.txt"), "utf8")).toBe("turn one\n");
  }, 180_000);

  it("throws StrataErrors with code, hint and retryable, and refuses bad options before any call", async () => {
    const denied = await createStrataClient({ url: server!.url, token: "strata_not-a-token" })
      .api.lineage.list.query({})
      .catch((e: unknown) => e);
    expect(isStrataError(denied, "UNAUTHORIZED")).toBe(true);
    expect(denied).toMatchObject({ retryable: false, hint: expect.stringContaining("strata agent create") });

    const repo = initRepository();
    const noRemote = await createStrataClient({ url: server!.url, token: "strata_x" })
      .checkpoint(repo, { context: "c" })
      .catch((e: unknown) => e);
    expect(isStrataError(noRemote, "INVALID_INPUT")).toBe(true);
    expect(() => createStrataClient({ url: "strata.example.com", token: "t" })).toThrow(/not an http\(s\) URL/);
    expect(() => createStrataClient({ url: server!.url, token: "" })).toThrow(/agent token is required/);
  });
});

describe("the SDK's retries, with the database restarted mid-call", () => {
  let cluster: PrivatePostgres;
  let handle: CatalogHandle;
  let server: TestServer;
  let agent: Awaited<ReturnType<typeof makeAgent>>;
  /** The requests the SDK sent, by procedure path. */
  const sent: string[] = [];
  const countingFetch: typeof fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    sent.push(url.pathname.replace("/api/trpc/", ""));
    return fetch(input, init);
  };

  beforeAll(async () => {
    cluster = await startPrivatePostgres();
    await migrate(cluster.url);
    handle = openCatalog(cluster.url);
    server = await serveApp({ db: handle.db });
    agent = await makeAgent(handle.db, "sdk-retry");
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await handle?.close();
    await cluster?.destroy();
  });

  const client = () =>
    createStrataClient({
      url: server.url,
      token: agent.token,
      fetch: countingFetch,
      retry: { attempts: 8, baseDelayMs: 200 },
    });

  it("sends a read again until the database is back, and a keyed creating call with the same key, once done", async () => {
    const strata = client();
    const key = {
      repository: { identity: `example.invalid/${uniqueName("retry")}` },
      backendKind: "local",
      baseImage: "img",
      workContextId: uniqueName("wc"),
    };
    await cluster.stop();
    sent.length = 0;
    const restart = new Promise<void>((resolve, reject) => {
      setTimeout(() => cluster.start().then(resolve, reject), 1_500);
    });
    // A read the acquire cannot change (a cold acquire records no snapshot), whichever is answered first.
    const read = strata.api.snapshot.list.query({});
    const acquired = strata.api.workspace.acquire.mutate({
      ...key,
      canonicalRef: "refs/heads/main",
      workspace: "/home/dev/ws",
      host: "h",
    });
    const [page, plan] = await Promise.all([read, acquired]);
    await restart;
    expect(page.items).toEqual([]);
    expect(plan.rung).toBe("cold");
    // Both were sent more than once, and the acquire did its work once.
    expect(sent.filter((p) => p.includes("snapshot.list")).length).toBeGreaterThan(1);
    expect(sent.filter((p) => p === "workspace.acquire").length).toBeGreaterThan(1);
    expect(await handle.db.restore.count({ where: { agentId: agent.scope.agentId } })).toBe(1);
  }, 60_000);

  it("never sends a refused call twice", async () => {
    const strata = client();
    sent.length = 0;
    const missing = await strata.api.snapshot.get.query({ snapshotId: "no-such-snapshot" }).catch((e: unknown) => e);
    expect(isStrataError(missing, "NOT_FOUND")).toBe(true);
    const invalid = await strata.api.checkpoint.append
      .mutate({ key: { repository: { identity: "" } } } as never)
      .catch((e: unknown) => e);
    expect(isStrataError(invalid, "INVALID_INPUT")).toBe(true);
    expect(sent).toEqual(["snapshot.get", "checkpoint.append"]);
  });
});
