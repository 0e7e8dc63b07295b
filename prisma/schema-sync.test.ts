// The SQLite schema is generated from the PostgreSQL one; a stale or hand-edited copy fails here.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { POSTGRES_SCHEMA, SQLITE_SCHEMA, toSqliteSchema } from "./sqlite-schema.ts";

describe("prisma schemas", () => {
  it("the SQLite schema is exactly what the PostgreSQL schema generates (run `npm run schema:sqlite`)", () => {
    expect(readFileSync(SQLITE_SCHEMA, "utf8")).toBe(toSqliteSchema(readFileSync(POSTGRES_SCHEMA, "utf8")));
  });

  it("changes only the provider, the client output and native column types", () => {
    const pg = [
      'generator client {\n  output = "../../server/db/generated/postgres"\n}',
      'datasource db {\n  provider = "postgresql"\n}',
      "model A {\n  id String @id @db.Uuid\n  n Decimal @db.Decimal(10, 2)\n}",
    ].join("\n");
    const lite = toSqliteSchema(pg);
    expect(lite).toContain('provider = "sqlite"');
    expect(lite).toContain('output = "../../server/db/generated/sqlite"');
    expect(lite).toContain("id String @id\n");
    expect(lite).toContain("n Decimal\n");
    expect(lite).not.toContain("@db.");
  });
});
