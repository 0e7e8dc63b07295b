// Test support: a catalog-wide fingerprint (the row count of every table and the set of stored
// blob digests), so a test can show that a refused call stored nothing anywhere.
import type { CatalogHandle, Db } from "../db/catalog.ts";

type DatabaseKind = CatalogHandle["kind"];

export interface CatalogFingerprint {
  rows: Record<string, number>;
  blobDigests: string[];
}

async function tableNames(db: Db, kind: DatabaseKind): Promise<string[]> {
  const rows =
    kind === "sqlite"
      ? await db.$queryRawUnsafe<{ name: string }[]>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
      : await db.$queryRawUnsafe<{ name: string }[]>(
          "SELECT tablename::text AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
        );
  return rows.map((r) => r.name);
}

/** Returns a function computing the fingerprint in one query (tables are listed once). */
export async function fingerprinter(db: Db, kind: DatabaseKind): Promise<() => Promise<CatalogFingerprint>> {
  const tables = await tableNames(db, kind);
  if (tables.length === 0) throw new Error("the catalog has no tables");
  const select = tables.map((t, i) => `(SELECT count(*) FROM "${t.replaceAll('"', '""')}") AS c${i}`).join(", ");
  return async () => {
    const [counts] = await db.$queryRawUnsafe<Record<string, bigint | number>[]>(`SELECT ${select}`);
    const rows: Record<string, number> = {};
    tables.forEach((t, i) => (rows[t] = Number(counts?.[`c${i}`])));
    const blobs = await db.blob.findMany({ select: { digest: true }, orderBy: { digest: "asc" } });
    return { rows, blobDigests: blobs.map((b) => b.digest) };
  };
}
