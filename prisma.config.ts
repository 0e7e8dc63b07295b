// Prisma CLI configuration. Strata applies migrations itself (server/db/migrate.ts), so the CLI
// is used only to generate the two clients and to diff schemas into new migration files; both
// need no database. The adapter below is there so the CLI never tries to download an engine.
import type { PrismaConfig } from "prisma";

const url = process.env.DATABASE_URL ?? "file:./.strata/strata.db";
const isPostgres = /^postgres(ql)?:\/\//.test(url);

export default {
  experimental: { adapter: true },
  engine: "js",
  schema: isPostgres ? "prisma/postgres/schema.prisma" : "prisma/sqlite/schema.prisma",
  migrations: { path: isPostgres ? "prisma/postgres/migrations" : "prisma/sqlite/migrations" },
  adapter: async () => {
    if (isPostgres) {
      const { PrismaPg } = await import("@prisma/adapter-pg");
      return new PrismaPg({ connectionString: url });
    }
    const { PrismaBetterSQLite3 } = await import("@prisma/adapter-better-sqlite3");
    return new PrismaBetterSQLite3({ url });
  },
} satisfies PrismaConfig;
