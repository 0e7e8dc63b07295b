// A provider without snapshots (STRATA_PROVIDERS "fly:no-snapshots") on both databases: acquire
// restores nothing for it. A work context that holds its workspace on the requesting host
// continues there (the live rung); anywhere else, or once the hold is over, it starts cold (and
// is told to inspect external state when it had checkpoints), whatever baseline or checkpoints
// the catalog has. The same key on a provider with snapshots still walks the ladder.
import { realpathSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ProviderSettings } from "../backends/providers.ts";
import { enqueueRestore } from "../jobs/agent-jobs.ts";
import { holdWorkspace } from "../lineage/hold-workspace.ts";
import { captureInto } from "../testing/checkouts.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { addOrigin, initRepository, removeTemporaryDirectories, write } from "../testing/repos.ts";
import { publishCheckpointCapture } from "../testing/restore.ts";
import { acquireWorkspace } from "./acquire-workspace.ts";

afterAll(removeTemporaryDirectories);

const PROVIDERS: ProviderSettings = { fly: { snapshots: false, idlePersistentHolds: true } };

describeEachDatabase("acquire on a provider without snapshots", (catalog) => {
  let agent: TestAgent;
  beforeAll(async () => {
    agent = await makeAgent(catalog().db, "no-snapshots");
  });

  async function pausedTask() {
    const root = realpathSync(initRepository({ "a.txt": "a\n", ".id": `${uniqueName("repo")}\n` }));
    addOrigin(root);
    const key = {
      repository: { identity: `example.test/acme/${uniqueName("app")}` },
      backendKind: "fly",
      baseImage: "none",
    };
    const workContextId = uniqueName("wc");
    write(root, "a.txt", "paused work\n");
    const blobs = new Map<string, Buffer>();
    const manifest = await captureInto(root, blobs);
    const head = await publishCheckpointCapture(
      catalog().db,
      agent.scope,
      { ...key, workContextId, observedHeadId: null },
      manifest,
      blobs,
    );
    return { root, key, workContextId, head };
  }

  const acquire = (
    task: Awaited<ReturnType<typeof pausedTask>>,
    opts: { host?: string; providers?: ProviderSettings; workContextId?: string } = {},
  ) =>
    acquireWorkspace(catalog().db, {
      agent: agent.scope,
      ...task.key,
      canonicalRef: "main",
      workContextId: opts.workContextId ?? task.workContextId,
      workspace: "/workspaces/task",
      host: opts.host ?? "host-1",
      providers: opts.providers ?? PROVIDERS,
    });

  it("starts cold where the ladder would restore a checkpoint, and says the work had state", async () => {
    const task = await pausedTask();
    const withSnapshots = await acquire(task, { providers: {} });
    expect(withSnapshots).toMatchObject({ rung: "checkpoint", snapshot: { id: task.head } });

    const plan = await acquire(task);
    expect(plan).toMatchObject({ rung: "cold", snapshot: null, pinId: null, mustInspectExternalState: true });
    const row = await catalog().db.restore.findUniqueOrThrow({ where: { id: plan.restoreId } });
    expect(row).toMatchObject({ rung: "cold", snapshotId: null, pinId: null });

    const fresh = await acquire(task, { workContextId: uniqueName("new-wc") });
    expect(fresh).toMatchObject({ rung: "cold", snapshot: null, mustInspectExternalState: false });
  });

  it("continues in the workspace the work context holds on this host, and nowhere else", async () => {
    const task = await pausedTask();
    await holdWorkspace(catalog().db, {
      agent: agent.scope,
      workContextId: task.workContextId,
      snapshotId: task.head,
      workspace: task.root,
      host: "host-1",
      providers: PROVIDERS,
    });
    expect(await acquire(task, { host: "host-2" })).toMatchObject({ rung: "cold", snapshot: null });
    const live = await acquire(task);
    expect(live).toMatchObject({
      rung: "live",
      snapshot: { id: task.head },
      live: { workspace: task.root, host: "host-1" },
    });
    // The hold ended as the work context resumed: the next acquire starts cold.
    expect(await acquire(task)).toMatchObject({ rung: "cold", snapshot: null });
  });

  it("queues no restore job for it", async () => {
    const task = await pausedTask();
    const queued = await enqueueRestore(catalog().db, {
      agent: agent.scope,
      ...task.key,
      canonicalRef: "main",
      workContextId: task.workContextId,
      workspace: "/workspaces/job",
      host: "host-1",
      providers: PROVIDERS,
    });
    expect(queued).toMatchObject({ plan: { rung: "cold", snapshot: null }, job: null });
  });
});
