// Fresh, migrated catalogs of each kind, dropped afterwards: for the tests (through
// describeEachDatabase in test-databases.ts) and for the benchmarks, which need no test runner.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { parseIntoClientConfig } from "pg-connection-string";
import { openCatalog, type CatalogHandle, type DatabaseKind } from "../db/client.ts";
import { migrate } from "../db/migrate.ts";
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

/** Creates an empty database (no migrations applied). */
export async function createEmptyDatabase(kind: DatabaseKind): Promise<EmptyDatabase> {
  if (kind === "sqlite") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "strata-test-"));
    return {
      kind,
      url: `file:${path.join(dir, "catalog.db")}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `t_${randomBytes(6).toString("hex")}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
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

/** A fresh, migrated catalog. */
export async function createTestCatalog(kind: DatabaseKind): Promise<TestCatalog> {
  const empty = await createEmptyDatabase(kind);
  await migrate(empty.url);
  const handle = openCatalog(empty.url, { poolSize: 20 });
  return {
    ...handle,
    drop: async () => {
      await handle.close();
      await empty.drop();
    },
  };
}
