import { describe, expect, it } from "vitest";
import { readMigrations } from "../db/migrate.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { trustUser } from "../domain/scope.ts";
import { createContextInner } from "./init.ts";
import { createCaller } from "./root.ts";

describeEachDatabase("health and dashboard reads", (catalog, kind) => {
  const operator = trustUser("u-1", "ops@example.com", "operator");
  const caller = () => createCaller(createContextInner({ db: catalog().db, authorization: null, user: operator }));

  it("reports the database kind and the latest applied migration", async () => {
    const health = await caller().health();
    expect(health.status).toBe("ok");
    expect(health.database).toBe(kind);
    expect(health.migration).toBe(readMigrations(kind).at(-1)?.name);
    expect(health.migrationsApplied).toBe(readMigrations(kind).length);
    expect(Math.abs(Date.parse(health.databaseTime) - Date.now())).toBeLessThan(60_000);
  });

  describe("an empty catalog", () => {
    it("lists no repositories, snapshots, pins or restores", async () => {
      const c = caller();
      expect(await c.browse.repositories()).toEqual({ items: [], nextCursor: null });
      expect(await c.browse.snapshots({})).toEqual({ items: [], nextCursor: null });
      expect(await c.browse.restores()).toEqual({ items: [], nextCursor: null });
      const pins = await c.dashboard.pins({});
      expect(pins.pins).toEqual([]);
      const gc = await c.dashboard.collectionRuns({});
      expect(gc).toEqual({ runs: [], nextCursor: null });
    });
  });

  it("pages snapshots newest first with a stable cursor, hiding retired ones unless asked", async () => {
    const db = catalog().db;
    const agent = await db.agent.create({ data: { name: `pager-${kind}` } });
    const repository = await db.repository.create({ data: { identity: `example.com/pager-${kind}`, name: "pager" } });
    const base = Date.parse("2026-01-01T00:00:00Z");
    // Five snapshots, two sharing a timestamp so the id breaks the tie; the last one retired.
    const times = [0, 1, 1, 2, 3];
    for (const [i, t] of times.entries()) {
      await db.snapshot.create({
        data: {
          class: "baseline",
          state: i === 4 ? "retired" : "superseded",
          agentId: agent.id,
          repositoryId: repository.id,
          backendKind: "local",
          baseImage: "img",
          canonicalRef: "refs/heads/main",
          canonicalCommit: String(i).repeat(40),
          validation: {},
          createdAt: new Date(base + t * 1000),
        },
      });
    }
    const c = caller();
    const first = await c.browse.snapshots({ limit: 2, repositoryId: repository.id });
    const second = await c.browse.snapshots({ limit: 2, repositoryId: repository.id, cursor: first.nextCursor! });
    const seen = [...first.items, ...second.items];
    expect(seen).toHaveLength(4);
    expect(second.nextCursor).toBeNull();
    expect(seen.map((s) => s.createdAt.getTime())).toEqual([2, 1, 1, 0].map((t) => base + t * 1000));
    const tied = seen.filter((s) => s.createdAt.getTime() === base + 1000).map((s) => s.id);
    expect(tied).toEqual([...tied].sort());
    const all = await c.browse.snapshots({ limit: 50, repositoryId: repository.id, includeRetired: true });
    expect(all.items.map((s) => s.state)).toContain("retired");
    await expect(c.browse.snapshots({ cursor: "not-a-cursor" })).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });
});
