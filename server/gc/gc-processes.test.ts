// Collection across real processes: a collector killed with SIGKILL at each kind of point
// leaves a consistent catalog and the next run finishes its work; several processes that
// start at once run one collection between them.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import type { LayerDescriptor } from "../domain/content.ts";
import {
  collectGarbage,
  GC_LEASE,
  listCollectionRuns,
  type CollectPhase,
  type CollectResult,
} from "./collect-garbage.ts";
import { publishSnapshot } from "../content/layers.ts";
import { retireSnapshot } from "../lineage/retirement.ts";
import {
  ageBlobs,
  consistencyViolations,
  createCapturingSnapshot,
  createOwner,
  reachableLayers,
  storeBytes,
  storedLayer,
  type Owner,
} from "../testing/content.ts";

const CHILD = fileURLToPath(new URL("../testing/gc-process.ts", import.meta.url));
const LEASE_SECONDS = 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Collector {
  child: ChildProcess;
  /** Resolves with the first stdout line starting with `prefix`. */
  line(prefix: string): Promise<string>;
  exited: Promise<number | null>;
}

function startCollector(args: object): Collector {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, JSON.stringify(args)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters: { prefix: string; resolve: (line: string) => void }[] = [];
  const check = () => {
    for (const line of out.split("\n")) {
      for (const w of [...waiters]) {
        if (line.startsWith(w.prefix)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  };
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
    check();
  });
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    exited,
    line: (prefix) =>
      new Promise((resolve, reject) => {
        waiters.push({ prefix, resolve });
        check();
        void exited.then(() =>
          setTimeout(() => reject(new Error(`collector exited without "${prefix}": ${out}\n${err}`)), 100),
        );
      }),
  };
}

describeEachDatabase("collection in separate processes", (catalog) => {
  let owner: Owner;
  let manifest: string;
  const db = () => catalog().db;

  beforeAll(async () => {
    owner = await createOwner(db());
    manifest = (await storeBytes(db(), "process test manifest", owner)).digest;
    const keeper = await createCapturingSnapshot(db(), owner);
    await publishSnapshot(db(), { snapshotId: keeper, manifestDigest: manifest, layers: [], heads: [] });
  });

  /** Work for every phase: a retired snapshot's heads, a dead chain of 24 and loose blobs. */
  async function garbage(): Promise<{ dead: LayerDescriptor[]; live: LayerDescriptor[]; loose: string[] }> {
    const live: LayerDescriptor[] = [];
    for (let i = 0; i < 3; i += 1) live.push(await storedLayer(db(), { owner, parentUuid: live.at(-1)?.uuid ?? null }));
    const keep = await createCapturingSnapshot(db(), owner);
    await publishSnapshot(db(), {
      snapshotId: keep,
      manifestDigest: manifest,
      layers: live,
      heads: [live.at(-1)!.uuid],
    });
    const dead: LayerDescriptor[] = [];
    for (let i = 0; i < 24; i += 1) {
      dead.push(await storedLayer(db(), { owner, parentUuid: dead.at(-1)?.uuid ?? live[0]!.uuid }));
    }
    const doomed = await createCapturingSnapshot(db(), owner);
    await publishSnapshot(db(), {
      snapshotId: doomed,
      manifestDigest: manifest,
      layers: [live[0]!, ...dead],
      heads: [dead.at(-1)!.uuid],
    });
    await retireSnapshot(db(), { snapshotId: doomed, actor: { type: "system" } });
    const loose: string[] = [];
    for (let i = 0; i < 12; i += 1) loose.push((await storeBytes(db(), `loose ${Math.random()}`)).digest);
    await ageBlobs(db(), 7200, loose);
    return { dead, live, loose };
  }

  /** Retries until the dead collector's lease has expired, then runs to the end. */
  async function nextRunFinishes(): Promise<Exclude<CollectResult, { status: "skipped" }>> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const result = await collectGarbage(db(), {
        force: true,
        graceSeconds: 0,
        batchSize: 5,
        leaseSeconds: LEASE_SECONDS,
      });
      if (result.status === "finished") return result;
      expect(result).toMatchObject({ status: "skipped", reason: "running" });
      if (Date.now() > deadline) throw new Error("the killed collector's lease never expired");
      await sleep(250);
    }
  }

  const points: { at: "in" | "after"; phase: CollectPhase; nth: number }[] = [
    { at: "in", phase: "heads", nth: 1 },
    { at: "in", phase: "mark", nth: 2 },
    { at: "after", phase: "mark", nth: 2 },
    { at: "in", phase: "bytes", nth: 2 },
    { at: "in", phase: "blobs", nth: 1 },
  ];

  it.each(points)(
    "a collector killed $at a $phase batch leaves a consistent catalog, and the next run finishes",
    async (point) => {
      const { dead, live, loose } = await garbage();
      const collector = startCollector({
        url: catalog().url,
        options: { force: true, graceSeconds: 0, batchSize: 5, leaseSeconds: LEASE_SECONDS },
        pause: point,
      });
      await collector.line("PAUSED");
      if (point.at === "after") {
        // Between batches the catalog is already consistent, with work half done.
        expect(await consistencyViolations(db())).toEqual([]);
        expect(
          await db().layer.count({ where: { agentUuid: { in: dead.map((l) => l.uuid) }, state: "deleting" } }),
        ).toBeGreaterThan(0);
      }
      collector.child.kill("SIGKILL");
      expect(await collector.exited).toBeNull();
      // Until its lease expires nobody else collects.
      const early = await collectGarbage(db(), { force: true, graceSeconds: 0 });
      expect(early).toMatchObject({ status: "skipped", reason: "running" });

      // Killed mid-transaction: that batch rolled back; what committed before stays committed.
      expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);
      const [interrupted] = await listCollectionRuns(db(), { limit: 1 });
      expect(interrupted).toMatchObject({ status: "running", finishedAt: null });

      const finished = await nextRunFinishes();
      expect(finished.errorCode).toBeNull();
      const runs = await listCollectionRuns(db(), { limit: 2 });
      expect(runs[1]).toMatchObject({ id: interrupted!.id, status: "failed", errorCode: "INTERRUPTED" });
      expect(runs[0]).toMatchObject({ id: finished.runId, status: "finished" });
      expect(await db().lease.count({ where: { name: GC_LEASE } })).toBe(0);

      const states = await db().layer.findMany({ where: { agentUuid: { in: [...dead, ...live].map((l) => l.uuid) } } });
      for (const l of states) {
        expect(l.state, l.agentUuid).toBe(dead.some((d) => d.uuid === l.agentUuid) ? "deleted" : "available");
      }
      expect(await db().blob.count({ where: { digest: { in: [...dead.map((l) => l.digest), ...loose] } } })).toBe(0);
      expect(await consistencyViolations(db(), { hashBlobs: true })).toEqual([]);
      const reachable = await reachableLayers(db());
      const reachedByAgentUuid = new Set(
        (await db().layer.findMany({ where: { uuid: { in: [...reachable] } }, select: { agentUuid: true } })).map(
          (r) => r.agentUuid,
        ),
      );
      for (const l of live) expect(reachedByAgentUuid.has(l.uuid)).toBe(true);
    },
    60_000,
  );

  it("several processes starting at once run one collection between them", async () => {
    await garbage();
    // Make a collection due: the last one finished long ago.
    await db().collectionRun.updateMany({ data: { finishedAt: new Date(Date.now() - 2 * 3600 * 1000) } });
    const collectors = [1, 2, 3].map(() =>
      startCollector({ url: catalog().url, options: { graceSeconds: 0, intervalSeconds: 3600, batchSize: 5 } }),
    );
    const results = (await Promise.all(collectors.map((c) => c.line("{")))).map((l) => JSON.parse(l) as CollectResult);
    await Promise.all(collectors.map((c) => c.exited));
    expect(results.filter((r) => r.status === "finished")).toHaveLength(1);
    expect(results.filter((r) => r.status === "skipped")).toHaveLength(2);
    expect(await consistencyViolations(db())).toEqual([]);
  }, 60_000);
});
