// `strata gc` as an operator runs it, against a catalog of each kind.
import { spawnSync } from "node:child_process";
import { expect, it } from "vitest";
import { STRATA_BIN } from "../../server/testing/cli.ts";
import { describeEachDatabase } from "../../server/testing/databases.ts";
import { publishSnapshot } from "../../server/content/layers.ts";
import { retireSnapshot } from "../../server/lineage/retirement.ts";
import { createCapturingSnapshot, createOwner, storeBytes, storedLayer } from "../../server/testing/content.ts";

function strata(args: string[], databaseUrl: string) {
  const run = spawnSync(process.execPath, [STRATA_BIN, ...args], {
    encoding: "utf8",
    env: { NODE_ENV: "test", PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", DATABASE_URL: databaseUrl },
    timeout: 60_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describeEachDatabase("strata gc", (catalog) => {
  it("releases heads, collects, refuses to run again before the interval, and lists runs", async () => {
    const db = catalog().db;
    const owner = await createOwner(db);
    const manifest = (await storeBytes(db, "cli manifest", owner)).digest;
    const keeper = await createCapturingSnapshot(db, owner);
    await publishSnapshot(db, { snapshotId: keeper, manifestDigest: manifest, layers: [], heads: [] });
    const layer = await storedLayer(db, { owner });
    const s = await createCapturingSnapshot(db, owner);
    await publishSnapshot(db, { snapshotId: s, manifestDigest: manifest, layers: [layer], heads: [layer.uuid] });
    await retireSnapshot(db, { snapshotId: s, actor: { type: "system" } });

    const heads = strata(["gc", "release-heads"], catalog().url);
    expect(heads.code, heads.stderr).toBe(0);
    expect(heads.stdout).toMatch(/Released 1 head\(s\) of 1 snapshot/);

    // A dry run first: it names what the run below deletes, and changes nothing.
    const dry = strata(["gc", "collect", "--dry-run", "--grace", "0", "--json"], catalog().url);
    expect(dry.code, dry.stderr).toBe(0);
    const preview = JSON.parse(dry.stdout) as { dryRun: boolean; tally: Record<string, number> };
    expect(preview).toMatchObject({ dryRun: true, tally: { layersDeleted: 1, blobsDeleted: 1 } });
    expect((await db.layer.findFirstOrThrow({ where: { agentUuid: layer.uuid } })).state).toBe("available");
    const dryText = strata(["gc", "collect", "--dry-run", "--grace", "0"], catalog().url);
    expect(dryText.stdout).toMatch(/Dry run finished, nothing changed/);
    expect(dryText.stdout).toMatch(new RegExp(`layers: +would delete 1 \\(${layer.sizeBytes} bytes declared\\)`));

    const run = strata(["gc", "collect", "--force", "--grace", "0", "--json"], catalog().url);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; tally: Record<string, number> };
    expect(result).toMatchObject({ status: "finished", tally: { layersDeleted: 1, blobsDeleted: 1 } });
    expect(result.tally).toMatchObject({ ...preview.tally, batches: result.tally.batches });
    expect((await db.layer.findFirstOrThrow({ where: { agentUuid: layer.uuid } })).state).toBe("deleted");
    // Audited like the dashboard's run, naming the CLI as who asked; its log line is JSON on stderr.
    const audited = await db.auditEvent.findFirstOrThrow({ where: { action: "gc.collect" } });
    expect(audited).toMatchObject({
      actorType: "system",
      subjectType: "collection",
      reason: "run with strata gc collect",
    });
    expect(audited.actorId).toMatch(/^cli/);
    const logged = run.stderr
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({ level: "info", msg: "collection run", status: "finished", layersDeleted: 1 }),
    );

    const again = strata(["gc", "collect"], catalog().url);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/Skipped: the last one is too recent/);

    const runs = strata(["gc", "runs", "--json"], catalog().url);
    expect(runs.code).toBe(0);
    expect((JSON.parse(runs.stdout) as { status: string }[])[0]).toMatchObject({
      status: "finished",
      layersDeleted: 1,
    });

    const bad = strata(["gc", "collect", "--grace", "-1"], catalog().url);
    expect(bad.code).toBe(2);
  }, 120_000);
});
