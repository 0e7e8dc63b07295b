// Generates the Prisma clients of both providers (run by `npm install`). Needs no database.
//
// A client whose schema and Prisma version are those it was generated from is left as it is
// (a stamp in its folder records them), so an install that changes neither costs nothing here:
// the first `npx strata` in a checkout runs this as the package's postinstall. `--force`
// generates both anyway.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const env = {
  ...process.env,
  // Never let the Prisma CLI try to download a native engine (none is needed, none can be fetched).
  PRISMA_SCHEMA_ENGINE_BINARY: "/bin/true",
  PRISMA_QUERY_ENGINE_LIBRARY: "/bin/true",
  CHECKPOINT_DISABLE: "1",
  PRISMA_HIDE_UPDATE_MESSAGE: "1",
};

const targets = [
  {
    schema: "prisma/postgres/schema.prisma",
    output: "server/db/generated/postgres",
    url: "postgresql://localhost/strata-generate",
  },
  { schema: "prisma/sqlite/schema.prisma", output: "server/db/generated/sqlite", url: "file:./.strata/generate.db" },
];

const require = createRequire(import.meta.url);
const prismaVersion = JSON.parse(readFileSync(require.resolve("prisma/package.json"), "utf8")).version;
const force = process.argv.includes("--force");

for (const { schema, output, url } of targets) {
  const stampFile = path.join(ROOT, output, ".strata-generated");
  const stamp = createHash("sha256")
    .update(`prisma ${prismaVersion}\n`)
    .update(readFileSync(path.join(ROOT, schema)))
    .digest("hex");
  if (!force && existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) continue;
  const run = spawnSync("npx", ["prisma", "generate", "--schema", schema], {
    cwd: ROOT,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...env, DATABASE_URL: url },
  });
  if (run.status !== 0) {
    process.stderr.write(`prisma generate failed for ${schema}\n`);
    process.exit(run.status ?? 1);
  }
  writeFileSync(stampFile, stamp);
}
