// Derives the SQLite schema from the PostgreSQL one, so the two providers never drift.
// `npm run schema:sqlite` writes it; prisma/schema-sync.test.ts fails when the file is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const POSTGRES_SCHEMA = fileURLToPath(new URL("./postgres/schema.prisma", import.meta.url));
export const SQLITE_SCHEMA = fileURLToPath(new URL("./sqlite/schema.prisma", import.meta.url));

const HEADER = "// GENERATED from prisma/postgres/schema.prisma by `npm run schema:sqlite`. Do not edit.\n";

export function toSqliteSchema(postgres: string): string {
  const replaced = postgres
    .replace(/provider\s*=\s*"postgresql"/, 'provider = "sqlite"')
    .replace(/(output\s*=\s*"[^"]*\/)postgres"/, '$1sqlite"')
    // Native PostgreSQL column types have no SQLite meaning.
    .replace(/\s@db\.\w+(\([^)]*\))?/g, "");
  if (replaced.includes('"postgresql"')) throw new Error("postgres provider left in the SQLite schema");
  return HEADER + replaced;
}

function main(): void {
  const next = toSqliteSchema(readFileSync(POSTGRES_SCHEMA, "utf8"));
  writeFileSync(SQLITE_SCHEMA, next);
  process.stdout.write(`wrote ${SQLITE_SCHEMA}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
