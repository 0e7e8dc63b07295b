// The job procedures on both databases: an agent enqueues, reads, lists and cancels only its
// own jobs; enqueueRestore records the acquire decision and its job together.
import { beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { createAgent } from "../auth/agents.ts";
import { uniqueName } from "../testing/lineage.ts";
import { createContextInner } from "./init.ts";
import { createCaller } from "./root.ts";
import { failureCode } from "../testing/calls.ts";

describeEachDatabase("job API", (catalog) => {
  let alice: ReturnType<typeof createCaller>;
  let bob: ReturnType<typeof createCaller>;
  const callerFor = (token: string) =>
    createCaller(createContextInner({ db: catalog().db, authorization: `Bearer ${token}`, user: null }));
  const key = () => ({
    repository: { identity: `example.invalid/${uniqueName("jobs")}` },
    backendKind: "local",
    baseImage: "img",
    workContextId: uniqueName("wc"),
  });

  beforeAll(async () => {
    alice = callerFor((await createAgent(catalog().db, { name: uniqueName("alice") })).token);
    bob = callerFor((await createAgent(catalog().db, { name: uniqueName("bob") })).token);
  });

  it("enqueues a capture for a host and shows it only to its agent", async () => {
    const job = await alice.job.enqueueCapture({ host: "build-1", dir: "/home/dev/checkout", key: key() });
    expect(job).toMatchObject({ kind: "capture", host: "build-1", state: "created", attempts: 0, progress: null });
    expect((await alice.job.get({ jobId: job.id })).id).toBe(job.id);
    expect((await alice.job.list({ host: "build-1" })).map((j) => j.id)).toContain(job.id);
    expect(await failureCode(bob.job.get({ jobId: job.id }))).toBe("NOT_FOUND");
    expect(await bob.job.list({})).toEqual([]);
    expect(await failureCode(bob.job.cancel({ jobId: job.id }))).toBe("NOT_FOUND");
    expect((await alice.job.cancel({ jobId: job.id })).state).toBe("cancelled");
  });

  it("refuses a relative directory or a bad host name before recording anything", async () => {
    const before = await alice.job.list({});
    expect(await failureCode(alice.job.enqueueCapture({ host: "build-1", dir: "relative/path", key: key() }))).toBe(
      "BAD_REQUEST",
    );
    expect(await failureCode(alice.job.enqueueCapture({ host: "-x", dir: "/abs", key: key() }))).toBe("BAD_REQUEST");
    expect(await alice.job.list({})).toHaveLength(before.length);
  });

  it("records the acquire decision and the restore job together; the cold rung needs no job", async () => {
    const k = key();
    const cold = await alice.job.enqueueRestore({
      repository: k.repository,
      backendKind: k.backendKind,
      baseImage: k.baseImage,
      canonicalRef: "refs/heads/main",
      workspace: "/home/dev/restore-here",
      host: "build-2",
    });
    expect(cold.plan.rung).toBe("cold");
    expect(cold.job).toBeNull();
    const row = await catalog().db.restore.findUnique({ where: { id: cold.plan.restoreId } });
    expect(row?.host).toBe("build-2");
  });
});
