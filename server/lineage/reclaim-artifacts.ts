// Reclaiming the artifacts of deleted snapshots through the backend that minted them
// (backendFor(artifactKind)), as the seed's workspace sweeper does. The catalog row is never
// lost: a delete that fails (an unknown kind, a provider error) is recorded on the row
// (`reclaimAttempts`, `reclaimError`) and tried again by the next sweep; a delete that finds the
// artifact already gone counts as done. An artifact another live row still names is left alone.
import { catalogContentStore } from "../backends/content-store.ts";
import { backendFor } from "../backends/registry.ts";
import type { Db } from "../db/client.ts";
import { isStrataError } from "../domain/errors.ts";

export interface ReclaimResult {
  /** Artifacts the backends deleted (or found gone). */
  deleted: number;
  /** Artifacts whose delete failed this time, with why (tried again by the next sweep). */
  failed: { snapshotId: string; kind: string; error: string }[];
  /** Artifacts left because another snapshot or a dependency cache still names them. */
  shared: number;
}

function describeError(error: unknown): string {
  const text = isStrataError(error) ? `${error.code}: ${error.message}` : (error as Error).message;
  return text.slice(0, 500);
}

/** Whether a live snapshot (other than `exceptId`) or a dependency cache names the artifact. */
async function stillNamed(db: Db, kind: string, ref: string, exceptId: string): Promise<boolean> {
  const [snapshots, caches] = await Promise.all([
    db.snapshot.count({
      where: { artifactKind: kind, artifactRef: ref, id: { not: exceptId }, state: { notIn: ["deleting", "deleted"] } },
    }),
    db.dependencyCache.count({ where: { artifactKind: kind, artifactRef: ref, state: { not: "deleted" } } }),
  ]);
  return snapshots + caches > 0;
}

export async function reclaimArtifacts(db: Db, opts: { now: Date; batchSize?: number }): Promise<ReclaimResult> {
  const result: ReclaimResult = { deleted: 0, failed: [], shared: 0 };
  const batchSize = opts.batchSize ?? 100;
  for (let after: string | undefined; ;) {
    const rows = await db.snapshot.findMany({
      where: {
        state: "deleted",
        artifactRef: { not: null },
        artifactDeletedAt: null,
        ...(after ? { id: { gt: after } } : {}),
      },
      orderBy: { id: "asc" },
      take: batchSize,
      select: { id: true, agentId: true, artifactKind: true, artifactRef: true },
    });
    for (const row of rows) {
      const ref = row.artifactRef!;
      if (await stillNamed(db, row.artifactKind, ref, row.id)) {
        result.shared += 1;
        continue;
      }
      try {
        await backendFor(row.artifactKind).delete(ref, { store: catalogContentStore(db, row.agentId) });
        await db.snapshot.update({ where: { id: row.id }, data: { artifactDeletedAt: opts.now, reclaimError: null } });
        result.deleted += 1;
      } catch (error) {
        const message = describeError(error);
        await db.snapshot.update({
          where: { id: row.id },
          data: { reclaimAttempts: { increment: 1 }, reclaimError: message },
        });
        result.failed.push({ snapshotId: row.id, kind: row.artifactKind, error: message });
      }
    }
    if (rows.length < batchSize) break;
    after = rows.at(-1)?.id;
  }
  return result;
}
