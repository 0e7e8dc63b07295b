// Test support: a fresh, migrated database of each kind per test file, dropped afterwards.
// Every database test runs on SQLite and on PostgreSQL through describeEachDatabase.
import { afterAll, beforeAll, describe } from "vitest";
import type { DatabaseKind } from "../db/client.ts";
import { createTestCatalog, DATABASE_KINDS, type TestCatalog } from "./catalog.ts";

export { createEmptyDatabase, createTestCatalog, DATABASE_KINDS } from "./catalog.ts";
export type { EmptyDatabase, TestCatalog } from "./catalog.ts";

/**
 * Declares the same suite once per database kind. The callback receives a getter for the
 * catalog, which exists once the suite's beforeAll has run.
 */
export function describeEachDatabase(name: string, suite: (catalog: () => TestCatalog, kind: DatabaseKind) => void) {
  for (const kind of DATABASE_KINDS) {
    describe(`${name} [${kind}]`, () => suite(catalogPerSuite(kind), kind));
  }
}

/**
 * A fresh catalog of `kind` for the enclosing describe block: created before its tests, dropped
 * after them. Returns its getter.
 */
export function catalogPerSuite(kind: DatabaseKind): () => TestCatalog {
  let catalog: TestCatalog | undefined;
  beforeAll(async () => {
    catalog = await createTestCatalog(kind);
  }, 60_000);
  afterAll(async () => {
    await catalog?.drop();
  });
  return () => {
    if (!catalog) throw new Error("the test catalog is not ready (beforeAll failed)");
    return catalog;
  };
}
