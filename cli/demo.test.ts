// The demo is made by the real capture and restore code; it must leave every kind of history the
// dashboard shows, on both databases.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { describeEachDatabase } from "../server/testing/databases.ts";
import { runDemo } from "./demo.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describeEachDatabase("strata demo", (catalog, kind) => {
  it("fills an empty catalog with baselines, chains, a degraded restore, retirements and pins", async () => {
    const db = catalog().db;
    const workDir = mkdtempSync(path.join(os.tmpdir(), `strata-demo-${kind}-`));
    dirs.push(workDir);
    const summary = await runDemo({ db, workDir, host: "demo-host" });

    expect(summary.agents).toEqual(["claude-ci", "codex-review"]);
    expect(summary.user?.email).toBe("admin@strata.demo");
    expect(await db.snapshot.count({ where: { class: "baseline", state: "superseded" } })).toBeGreaterThanOrEqual(1);
    expect(await db.snapshot.count({ where: { class: "baseline", state: "retired" } })).toBe(1);
    expect(await db.snapshot.count({ where: { class: "baseline", state: "ready" } })).toBe(2);
    const longest = await db.snapshot.findFirst({ where: { class: "checkpoint" }, orderBy: { sequence: "desc" } });
    expect(longest?.sequence).toBeGreaterThanOrEqual(3);
    expect(await db.lineage.count({ where: { state: "retired", retiredReason: "completed" } })).toBe(1);

    // The second machine could not reach the unpushed commit (it touched .env.local, so no bundle).
    const degraded = await db.restore.findFirstOrThrow({ where: { outcome: "degraded" } });
    expect(degraded.rung).toBe("checkpoint");
    const pin = await db.pin.findFirstOrThrow({ where: { pinId: degraded.pinId! } });
    expect(pin.released).toBe(false);
    expect(pin.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 29 * 24 * 3600 * 1000);
    expect(await db.restore.count({ where: { outcome: "pending" } })).toBe(1);
    expect(await db.collectionRun.count()).toBeGreaterThanOrEqual(1);
    expect(await db.layer.count()).toBeGreaterThan(0);

    // No secret reached storage: the demo's .env.local value is nowhere in the blob rows.
    const chunks = await db.blobChunk.findMany({ select: { data: true } });
    expect(chunks.some((c) => Buffer.from(c.data).includes("demo-value-not-a-real-secret"))).toBe(false);

    await expect(runDemo({ db, workDir, host: "demo-host" })).rejects.toMatchObject({ code: "CONFLICT" });
  });
});
