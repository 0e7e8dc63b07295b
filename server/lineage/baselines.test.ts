import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import { publishBaseline } from "./baselines.ts";
import {
  baselineKeyOf,
  cleanEvidence,
  makeAgent,
  manifestOf,
  oid,
  publishClean,
  scenario,
} from "../testing/lineage.ts";

describeEachDatabase("publishBaseline", (catalog) => {
  it("publishes the first baseline of a key with its evidence and manifest", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const result = await publishClean(db, agent, s, "main@1", null);
    expect(result.outcome).toBe("published");
    expect(result.supersededId).toBeNull();
    expect(result.snapshot).toMatchObject({
      class: "baseline",
      state: "ready",
      canonicalRef: "refs/heads/main",
      canonicalCommit: oid("main@1"),
      workContextId: null,
      lineageId: null,
      manifest: { head: oid("main@1"), branch: "main", sizeBytes: 1024n },
    });
    expect(result.snapshot.manifest.blobDigests).toHaveLength(1);
    const row = await db.snapshot.findUniqueOrThrow({ where: { id: result.snapshot.id } });
    expect(row.validation).toMatchObject({ fetched: true, remoteCommit: oid("main@1"), stagedCount: 0 });
    const repo = await db.repository.findUniqueOrThrow({ where: { identity: s.repository.identity } });
    expect(repo.name).toBe(s.repository.identity.split("/").at(-1));
  });

  it("supersedes the observed head (compare-and-swap) and is idempotent for the same commit", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const first = await publishClean(db, agent, s, "main@1", null);
    const second = await publishClean(db, agent, s, "main@2", first.snapshot.id);
    expect(second).toMatchObject({ outcome: "published", supersededId: first.snapshot.id });
    const old = await db.snapshot.findUniqueOrThrow({ where: { id: first.snapshot.id } });
    expect(old.state).toBe("superseded");
    expect(old.supersededAt).not.toBeNull();

    // Publishing the same commit again changes nothing, whatever the caller observed.
    const again = await publishClean(db, agent, s, "main@2", first.snapshot.id);
    expect(again).toMatchObject({ outcome: "unchanged", snapshot: { id: second.snapshot.id } });
    expect(await db.snapshot.count({ where: { repository: { identity: s.repository.identity } } })).toBe(2);
  });

  it("refuses a publisher whose observed head moved, and changes nothing", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const first = await publishClean(db, agent, s, "main@1", null);
    const second = await publishClean(db, agent, s, "main@2", first.snapshot.id);
    const stale = await publishClean(db, agent, s, "main@1b", first.snapshot.id).catch((e: unknown) => e);
    expect(isStrataError(stale, "BASELINE_STALE")).toBe(true);
    expect(stale).toMatchObject({ retryable: true, data: { currentHeadId: second.snapshot.id } });
    const none = await publishClean(db, agent, s, "main@3", null).catch((e: unknown) => e);
    expect(isStrataError(none, "BASELINE_STALE")).toBe(true);
    const ready = await db.snapshot.findMany({
      where: { repository: { identity: s.repository.identity }, state: "ready" },
    });
    expect(ready.map((r) => r.id)).toEqual([second.snapshot.id]);
  });

  it("re-checks the evidence and names every failed check; nothing is written", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const commit = oid("main@1");
    const error = await publishBaseline(db, {
      agent,
      key: baselineKeyOf(s),
      commit,
      manifest: manifestOf({ head: commit, branch: "main" }),
      evidence: cleanEvidence(commit, {
        stagedCount: 2,
        inProgress: { merge: true, rebase: false, cherryPick: false, bisect: false },
      }),
      observedHeadId: null,
    }).catch((e: unknown) => e);
    expect(isStrataError(error, "EVIDENCE_INVALID")).toBe(true);
    expect(error).toMatchObject({ data: { failedChecks: ["nothing_staged", "no_operation_in_progress"] } });
    expect(await db.repository.count({ where: { identity: s.repository.identity } })).toBe(0);
  });

  it("keeps baseline keys apart: canonical ref, base image and agent", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const { scope: other } = await makeAgent(db);
    const s = scenario();
    await publishClean(db, agent, s, "main@1", null);
    // Same repository, another base image: its own key, so observing none is right.
    const image = await publishClean(db, agent, { ...s, baseImage: "sha256:" + "cd".repeat(32) }, "main@1", null);
    expect(image.outcome).toBe("published");
    const otherAgent = await publishClean(db, other, s, "main@1", null);
    expect(otherAgent.outcome).toBe("published");
    const develop = oid("develop@1");
    const onDevelop = await publishBaseline(db, {
      agent,
      key: { ...baselineKeyOf(s), canonicalRef: "refs/heads/develop" },
      commit: develop,
      manifest: manifestOf({ head: develop, branch: "develop" }),
      evidence: cleanEvidence(develop, { remoteTrackingRef: "refs/remotes/origin/develop", branch: "develop" }),
      observedHeadId: null,
    });
    expect(onDevelop.outcome).toBe("published");
    expect(
      await db.snapshot.count({ where: { repository: { identity: s.repository.identity }, state: "ready" } }),
    ).toBe(4);
  });
});
