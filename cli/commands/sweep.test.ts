// `strata sweep` as an operator runs it, against a catalog of each kind.
import { spawnSync } from "node:child_process";
import { expect, it } from "vitest";
import { STRATA_BIN } from "../../server/testing/cli.ts";
import { describeEachDatabase } from "../../server/testing/databases.ts";
import { appendCheckpoint } from "../../server/lineage/checkpoints.ts";
import { lineageKeyOf, makeAgent, manifestOf, oid, scenario, uniqueName } from "../../server/testing/lineage.ts";

function strata(args: string[], databaseUrl: string) {
  const run = spawnSync(process.execPath, [STRATA_BIN, ...args], {
    encoding: "utf8",
    env: { NODE_ENV: "test", PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", DATABASE_URL: databaseUrl },
    timeout: 60_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describeEachDatabase("strata sweep", (catalog) => {
  it("retires a stale checkpoint head and reports what it did", async () => {
    const db = catalog().db;
    const { scope: agent } = await makeAgent(db);
    const s = scenario();
    const twentyDaysAgo = new Date(Date.now() - 20 * 24 * 60 * 60 * 1000);
    const stale = await appendCheckpoint(db, {
      agent,
      key: lineageKeyOf(s, uniqueName("wc")),
      observedHeadId: null,
      manifest: manifestOf({ head: oid("old"), branch: "t" }),
      now: twentyDaysAgo,
    });

    const run = strata(["sweep", "--json"], catalog().url);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as { staleCheckpointIds: string[]; staleLineageIds: string[] };
    expect(result.staleCheckpointIds).toContain(stale.snapshot.id);
    expect(result.staleLineageIds).toContain(stale.lineageId);
    expect((await db.snapshot.findUniqueOrThrow({ where: { id: stale.snapshot.id } })).state).toBe("retired");

    const human = strata(["sweep", "--stale-days", "30"], catalog().url);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/Retired 0 stale checkpoint head/);
    expect(strata(["sweep", "--retention-days", "-1"], catalog().url).code).toBe(2);
  }, 120_000);
});
