// Every migration applies to an empty database of each kind, reruns are no-ops, edited history
// is refused, and the two providers end with the same tables, columns and named indexes.
import pg from "pg";
import { parseIntoClientConfig } from "pg-connection-string";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { openCatalog, sqlitePath, type DatabaseKind } from "./client.ts";
import { newestAppliedMigration } from "./health.ts";
import { ensureMigrated, migrate, readMigrations } from "./migrate.ts";
import { createEmptyDatabase, type EmptyDatabase } from "../testing/databases.ts";

type Shape = Record<string, string[]>;

async function tableShape(kind: DatabaseKind, url: string): Promise<{ columns: Shape; indexes: string[] }> {
  if (kind === "sqlite") {
    const db = new Database(sqlitePath(url), { readonly: true });
    try {
      const tables = db
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
        .all() as { name: string }[];
      const columns: Shape = {};
      for (const { name } of tables) {
        columns[name] = (db.prepare(`PRAGMA table_info("${name}")`).all() as { name: string }[])
          .map((c) => c.name)
          .sort();
      }
      const indexes = (
        db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`).all() as {
          name: string;
        }[]
      ).map((i) => i.name);
      return { columns, indexes };
    } finally {
      db.close();
    }
  }
  const client = new pg.Client(parseIntoClientConfig(url) as pg.ClientConfig);
  await client.connect();
  try {
    const cols = await client.query<{ table_name: string; column_name: string }>(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name`,
    );
    const columns: Shape = {};
    for (const row of cols.rows) (columns[row.table_name] ??= []).push(row.column_name);
    for (const list of Object.values(columns)) list.sort();
    // Primary keys are implicit indexes in SQLite; compare the indexes both providers name.
    const idx = await client.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' ORDER BY indexname`,
    );
    return { columns, indexes: idx.rows.map((r) => r.indexname) };
  } finally {
    await client.end();
  }
}

describe("migrations", () => {
  const created: EmptyDatabase[] = [];
  afterAll(async () => {
    for (const db of created) await db.drop();
  });

  async function fresh(kind: DatabaseKind): Promise<EmptyDatabase> {
    const db = await createEmptyDatabase(kind);
    created.push(db);
    return db;
  }

  it("both providers have the same migrations, in the same order", () => {
    expect(readMigrations("sqlite").map((m) => m.name)).toEqual(readMigrations("postgres").map((m) => m.name));
    expect(readMigrations("postgres").length).toBeGreaterThan(0);
  });

  for (const kind of ["sqlite", "postgres"] as const) {
    it(`applies every migration to an empty ${kind} database, and a rerun applies nothing`, async () => {
      const db = await fresh(kind);
      const first = await migrate(db.url);
      expect(first.applied).toEqual(readMigrations(kind).map((m) => m.name));
      const second = await migrate(db.url);
      expect(second.applied).toEqual([]);
      expect(second.latest).toBe(first.applied.at(-1));
    });

    it(`serializes concurrent migrations of one ${kind} database`, async () => {
      const db = await fresh(kind);
      const results = await Promise.all([migrate(db.url), migrate(db.url), migrate(db.url)]);
      const applied = results.flatMap((r) => r.applied);
      expect(applied.sort()).toEqual(
        readMigrations(kind)
          .map((m) => m.name)
          .sort(),
      );
    });
  }

  for (const kind of ["sqlite", "postgres"] as const) {
    it(`checks a ${kind} catalog with one query, and migrates only one that is new, behind or ahead`, async () => {
      const all = readMigrations(kind).map((m) => m.name);
      const db = await fresh(kind);
      const catalog = openCatalog(db.url);
      try {
        let asked = 0;
        const newest = () => (asked++, newestAppliedMigration(catalog.db));
        // No history at all: the query fails, so it migrates.
        expect((await ensureMigrated(db.url, newest)).applied).toEqual(all);
        expect(await ensureMigrated(db.url, newest)).toEqual({ kind, applied: [], latest: all.at(-1) });
        expect(asked).toBe(2);

        const behind = await fresh(kind);
        await migrate(behind.url, { migrations: readMigrations(kind).slice(0, -1) });
        const other = openCatalog(behind.url);
        try {
          const result = await ensureMigrated(behind.url, () => newestAppliedMigration(other.db));
          expect(result.applied).toEqual(all.slice(-1));
        } finally {
          await other.close();
        }

        await catalog.db.$executeRawUnsafe(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at) VALUES ('x', 'y', '29990101000000_future', CURRENT_TIMESTAMP)`,
        );
        await expect(ensureMigrated(db.url, newest)).rejects.toThrow(/does not know/);
      } finally {
        await catalog.close();
      }
    });
  }

  it("refuses a database whose applied migration was edited afterwards", async () => {
    const db = await fresh("sqlite");
    await migrate(db.url);
    const file = sqlitePath(db.url);
    const raw = new Database(file);
    raw.prepare(`UPDATE "_prisma_migrations" SET checksum = 'edited'`).run();
    raw.close();
    await expect(migrate(db.url)).rejects.toThrow(/changed after it was applied/);
  });

  it("refuses a database that has a migration this version does not know", async () => {
    const db = await fresh("sqlite");
    await migrate(db.url);
    const raw = new Database(sqlitePath(db.url));
    raw
      .prepare(
        `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at) VALUES ('x', 'y', '29990101000000_future', current_timestamp)`,
      )
      .run();
    raw.close();
    await expect(migrate(db.url)).rejects.toThrow(/does not know/);
  });

  for (const kind of ["sqlite", "postgres"] as const) {
    it(`leaves nothing of a failing ${kind} migration behind`, async () => {
      const db = await fresh(kind);
      const broken = {
        name: "29990101000000_broken",
        sql: `CREATE TABLE "half_done" ("id" TEXT);\nINSERT INTO "no_such_table" VALUES (1);`,
        checksum: "0".repeat(64),
      };
      await expect(migrate(db.url, { migrations: [...readMigrations(kind), broken] })).rejects.toThrow(
        /29990101000000_broken failed/,
      );
      const shape = await tableShape(kind, db.url);
      expect(shape.columns).not.toHaveProperty("half_done");
      // The good migrations before it stay applied, and a clean run afterwards is a no-op.
      expect(shape.columns).toHaveProperty("snapshots");
      expect((await migrate(db.url)).applied).toEqual([]);
    });
  }

  it("gives both providers the same tables, columns and indexes", async () => {
    const sqlite = await fresh("sqlite");
    const postgres = await fresh("postgres");
    await migrate(sqlite.url);
    await migrate(postgres.url);
    const a = await tableShape("sqlite", sqlite.url);
    const b = await tableShape("postgres", postgres.url);
    expect(Object.keys(a.columns).sort()).toEqual(Object.keys(b.columns).sort());
    expect(a.columns).toEqual(b.columns);
    expect(a.indexes).toEqual(b.indexes);
    for (const table of [
      "snapshots",
      "layers",
      "snapshot_heads",
      "pins",
      "blobs",
      "blob_chunks",
      "lineages",
      "restores",
    ]) {
      expect(a.columns).toHaveProperty(table);
    }
    for (const index of [
      "snapshots_one_ready_baseline",
      "snapshots_one_ready_checkpoint",
      "snapshots_created_at_id_idx",
      "layers_parent_uuid_idx",
      "snapshot_heads_layer_uuid_snapshot_id_idx",
      "pins_active_by_snapshot",
      "blobs_digest_idx",
    ]) {
      expect(a.indexes).toContain(index);
    }
  });
});
