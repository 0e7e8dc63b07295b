// Generates the Prisma clients of both providers (run by `npm install`). Needs no database.
import { spawnSync } from "node:child_process";

const env = {
  ...process.env,
  // Never let the Prisma CLI try to download a native engine (none is needed, none can be fetched).
  PRISMA_SCHEMA_ENGINE_BINARY: "/bin/true",
  PRISMA_QUERY_ENGINE_LIBRARY: "/bin/true",
  CHECKPOINT_DISABLE: "1",
  PRISMA_HIDE_UPDATE_MESSAGE: "1",
};

const targets = [
  { schema: "prisma/postgres/schema.prisma", url: "postgresql://localhost/strata-generate" },
  { schema: "prisma/sqlite/schema.prisma", url: "file:./.strata/generate.db" },
];

for (const { schema, url } of targets) {
  const run = spawnSync("npx", ["prisma", "generate", "--schema", schema], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...env, DATABASE_URL: url },
  });
  if (run.status !== 0) {
    process.stderr.write(`prisma generate failed for ${schema}\n`);
    process.exit(run.status ?? 1);
  }
}
