// Test support: a catalog-wide fingerprint (the row count of every table and the set of stored
// blob digests), so a test can show that a refused call stored nothing anywhere.
import type { Db } from "../db/catalog.ts";
import { dialectOf } from "../db/dialect.ts";

export interface CatalogFingerprint {
  rows: Record<string, number>;
  blobDigests: string[];
}

/** Returns a function computing the fingerprint in one query (tables are listed once). */
export async function fingerprinter(db: Db): Promise<() => Promise<CatalogFingerprint>> {
  const tables = await dialectOf(db).tableNames(db);
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
