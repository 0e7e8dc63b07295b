// Reclaiming superseded dependency caches past retention through the backend that minted them.
// A cache that a newer cache is layered on stays until that one goes (its content is the base of
// the newer one's): the row is locked and judged again before it moves to deleted, and a publish
// locks its base the same way. Then the backend deletes the artifact; a delete that fails is
// recorded on the row (`reclaimAttempts`, `reclaimError`) and tried again by the next sweep, and
// the row keeps naming the artifact.
import { catalogContentStore } from "../backends/content-store.ts";
import { backendFor } from "../backends/registry.ts";
import { inTransaction, type Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import { isStrataError } from "../domain/errors.ts";

export interface CacheSweepResult {
  deleted: number;
  failed: { cacheId: string; kind: string; error: string }[];
}

interface CacheRow {
  id: string;
  agentId: string;
  artifactKind: string;
  artifactRef: string;
}

const select = { id: true, agentId: true, artifactKind: true, artifactRef: true } as const;

export async function sweepDependencyCaches(
  db: Db,
  opts: { now: Date; retentionMs: number; batchSize?: number },
): Promise<CacheSweepResult> {
  const cutoff = new Date(opts.now.getTime() - opts.retentionMs);
  const result: CacheSweepResult = { deleted: 0, failed: [] };
  const batchSize = opts.batchSize ?? 100;
  const due = { state: "superseded", supersededAt: { lt: cutoff }, children: { none: { state: { not: "deleted" } } } };

  const reclaim = async (row: CacheRow) => {
    try {
      await backendFor(row.artifactKind).delete(row.artifactRef, { store: catalogContentStore(db, row.agentId) });
      await db.dependencyCache.update({ where: { id: row.id }, data: { reclaimError: null } });
      result.deleted += 1;
    } catch (error) {
      const message = (isStrataError(error) ? `${error.code}: ${error.message}` : (error as Error).message).slice(
        0,
        500,
      );
      await db.dependencyCache.update({
        where: { id: row.id },
        data: { reclaimAttempts: { increment: 1 }, reclaimError: message },
      });
      result.failed.push({ cacheId: row.id, kind: row.artifactKind, error: message });
    }
  };

  for (let after: string | undefined; ;) {
    const rows = await db.dependencyCache.findMany({
      where: { ...due, ...(after ? { id: { gt: after } } : {}) },
      orderBy: { id: "asc" },
      take: batchSize,
      select,
    });
    for (const row of rows) {
      const moved = await inTransaction(db, async (tx) => {
        await dialectOf(tx).lockRow(tx, "dependency_caches", row.id, "id");
        const still = await tx.dependencyCache.updateMany({
          where: { ...due, id: row.id },
          data: { state: "deleted", deletedAt: opts.now },
        });
        return still.count === 1;
      });
      if (moved) await reclaim(row);
    }
    if (rows.length < batchSize) break;
    after = rows.at(-1)?.id;
  }
  // Deletes that failed in an earlier sweep: tried again (this sweep's own failures wait for the next).
  const retries = await db.dependencyCache.findMany({
    where: { state: "deleted", reclaimError: { not: null }, id: { notIn: result.failed.map((f) => f.cacheId) } },
    select,
  });
  for (const row of retries) await reclaim(row);
  return result;
}
