// Fresh, migrated catalogs of each kind, dropped afterwards: for the tests (through
// describeEachDatabase in test-databases.ts) and for the benchmarks, which need no test runner.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { parseIntoClientConfig } from "pg-connection-string";
import { openCatalog, type CatalogHandle, type DatabaseKind } from "../db/client.ts";
import { migrate, readMigrations } from "../db/migrate.ts";
import { adminPostgresUrl, POSTGRES_HINT } from "./postgres.ts";

export const DATABASE_KINDS: DatabaseKind[] = ["sqlite", "postgres"];

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client(parseIntoClientConfig(adminPostgresUrl()) as pg.ClientConfig);
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`${POSTGRES_HINT} (${(error as Error).message})`);
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export interface EmptyDatabase {
  kind: DatabaseKind;
  url: string;
  drop(): Promise<void>;
}

/** Creates an empty database (no migrations applied), or on PostgreSQL a copy of `template`. */
export async function createEmptyDatabase(kind: DatabaseKind, template?: string): Promise<EmptyDatabase> {
  if (kind === "sqlite") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "strata-test-"));
    return {
      kind,
      url: `file:${path.join(dir, "catalog.db")}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `t_${randomBytes(6).toString("hex")}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ""}`));
  const url = new URL(adminPostgresUrl());
  url.pathname = `/${name}`;
  return {
    kind,
    url: url.toString(),
    drop: () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

export interface TestCatalog extends CatalogHandle {
  drop(): Promise<void>;
}

/**
 * The name of a PostgreSQL database holding every migration, for new catalogs to be copied from
 * (CREATE DATABASE … TEMPLATE): copying takes about 120 ms where migrating an empty database
 * takes 300 ms more, for each of the suite's 160-odd catalogs. The name carries a digest of the
 * migrations, so a changed migration gets a template of its own; one process builds it under a
 * temporary name, under an advisory lock, and renames it when it is complete.
 */
let templateName: Promise<string> | undefined;

function migratedTemplate(): Promise<string> {
  templateName ??= (async () => {
    const digest = createHash("sha256");
    for (const m of readMigrations("postgres")) digest.update(`${m.name}\0${m.checksum}\0`);
    const name = `strata_test_template_${digest.digest("hex").slice(0, 16)}`;
    await withAdmin(async (admin) => {
      await admin.query("SELECT pg_advisory_lock(hashtext('strata test template'))");
      try {
        const found = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
        if (found.rowCount) return;
        const building = `${name}_${randomBytes(4).toString("hex")}`;
        await admin.query(`CREATE DATABASE ${building}`);
        const url = new URL(adminPostgresUrl());
        url.pathname = `/${building}`;
        await migrate(url.toString());
        await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } finally {
        await admin.query("SELECT pg_advisory_unlock(hashtext('strata test template'))");
      }
    });
    return name;
  })();
  return templateName;
}

/** A fresh, migrated catalog. */
export async function createTestCatalog(kind: DatabaseKind): Promise<TestCatalog> {
  const empty = await createEmptyDatabase(kind, kind === "postgres" ? await migratedTemplate() : undefined);
  if (kind === "sqlite") await migrate(empty.url);
  const handle = openCatalog(empty.url, { poolSize: 20 });
  return {
    ...handle,
    drop: async () => {
      await handle.close();
      await empty.drop();
    },
  };
}
