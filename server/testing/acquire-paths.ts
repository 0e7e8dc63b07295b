// The acquire contract suite runs on every implementation of acquireWorkspace: Prisma in a
// transaction (SQLite), PostgreSQL's set-based statement on the pool (coalesced with concurrent
// acquires), and the same statement inside a caller's transaction (as job.enqueueRestore runs
// it). A suite declared with describeEachAcquirePath gets an `acquire` that takes its path.
import { describe } from "vitest";
import { acquireWorkspace } from "../acquire/acquire-workspace.ts";
import { inTransaction, type Db, type DatabaseKind } from "../db/client.ts";
import { catalogPerSuite, type TestCatalog } from "./databases.ts";

export type Acquire = typeof acquireWorkspace;

const ACQUIRE_PATHS: { name: string; kind: DatabaseKind; acquire: Acquire }[] = [
  { name: "sqlite", kind: "sqlite", acquire: acquireWorkspace },
  { name: "postgres, statement on the pool", kind: "postgres", acquire: acquireWorkspace },
  {
    name: "postgres, statement in a transaction",
    kind: "postgres",
    acquire: (db: Db, opts) => inTransaction(db, (tx) => acquireWorkspace(tx, opts)),
  },
];

/** Declares the same suite once per acquire implementation, each on a fresh catalog. */
export function describeEachAcquirePath(name: string, suite: (catalog: () => TestCatalog, acquire: Acquire) => void) {
  for (const path of ACQUIRE_PATHS) {
    describe(`${name} [${path.name}]`, () => suite(catalogPerSuite(path.kind), path.acquire));
  }
}
