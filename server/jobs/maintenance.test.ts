// The sweep's job pruning on both databases: finished jobs past the retention window go,
// everything else stays.
import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { FINISHED_JOB_RETENTION_MS, pruneFinishedJobs } from "./maintenance.ts";

const DAY = 24 * 60 * 60 * 1000;

describeEachDatabase("finished job pruning", (catalog) => {
  it("deletes completed, cancelled and failed jobs older than the retention, in batches, and nothing else", async () => {
    const db = catalog().db;
    const now = new Date("2026-11-30T12:00:00.000Z");
    const ago = (days: number) => new Date(now.getTime() - days * DAY);
    const base = {
      kind: "sweep",
      host: null,
      agentId: null,
      data: {},
      maxAttempts: 3,
      backoffMs: 1000,
      backoffMaxMs: 60_000,
      leaseSeconds: 60,
    };
    const finished = (id: string, state: string, days: number) =>
      db.job.create({
        data: {
          ...base,
          id,
          state,
          attempts: 1,
          runAfter: ago(days + 1),
          createdAt: ago(days + 1),
          finishedAt: ago(days),
        },
      });
    await finished("old-completed", "completed", 40);
    await finished("old-failed", "failed", 31);
    await finished("old-cancelled", "cancelled", 90);
    await finished("recent-completed", "completed", 29);
    await db.job.create({
      data: { ...base, id: "old-waiting", state: "created", attempts: 0, runAfter: ago(60), createdAt: ago(60) },
    });
    await db.job.create({
      data: {
        ...base,
        id: "old-running",
        state: "active",
        attempts: 1,
        runAfter: ago(60),
        createdAt: ago(60),
        startedAt: ago(59),
        claimedBy: "worker-1",
        leaseExpiresAt: ago(58),
      },
    });

    expect(FINISHED_JOB_RETENTION_MS).toBe(30 * DAY);
    expect(await pruneFinishedJobs(db, { now, batchSize: 2 })).toBe(3);
    const left = await db.job.findMany({ select: { id: true }, orderBy: { id: "asc" } });
    expect(left.map((j) => j.id)).toEqual(["old-running", "old-waiting", "recent-completed"]);
    // Repeating finds nothing more.
    expect(await pruneFinishedJobs(db, { now })).toBe(0);
  });
});
