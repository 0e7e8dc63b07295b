// A repository's pooled worktrees on the host this server runs on, for the repository page: the
// pool under this server's data directory (docs/worktrees.md), the worktrees whose repository
// identity is the catalog repository's, each with its lease (held, stale, free) and, for a free
// one, whether it holds anything to lose (worktree-cleanliness.ts). Other hosts' pools are not
// seen from here: `strata pool list` on that host shows them.
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { StrataError } from "../domain/errors.ts";
import { entityIdSchema } from "../domain/snapshot-keys.ts";
import { listPool, type PoolWorktree } from "../worktrees/list-pool.ts";
import { openWorktreePool, poolDirectory, type WorktreePool } from "../worktrees/pool.ts";
import { judgeCleanliness } from "../worktrees/worktree-cleanliness.ts";

export const repositoryPoolInput = z.strictObject({ repositoryId: entityIdSchema });

/**
 * What the page shows for a worktree: `held` / `stale` (its lease), else what a free one holds:
 * `idle-clean` (exactly its recorded snapshot, nothing to lose), `idle-dirty` (changes, untracked
 * files or ignored secrets), `marked` (a reset was interrupted: never reused, pruned),
 * `idle-empty` (nothing restored into it), `missing` (no directory), `not-a-checkout`.
 */
const poolStatusSchema = z.enum([
  "held",
  "stale",
  "idle-clean",
  "idle-dirty",
  "marked",
  "idle-empty",
  "missing",
  "not-a-checkout",
]);
type PoolStatus = z.infer<typeof poolStatusSchema>;

const pooledWorktreeSchema = z.object({
  name: z.string(),
  path: z.string(),
  /** The lease: held, stale (not refreshed lately, nobody may take it yet) or free. */
  state: z.enum(["held", "stale", "free"]),
  status: poolStatusSchema,
  /** What makes an idle worktree dirty or marked, in a phrase. */
  detail: z.string().nullable(),
  /** A reset to another snapshot began in it and has not finished. */
  marked: z.boolean(),
  /** Who holds it or held it last (null once released). */
  holder: z.object({ pid: z.number(), host: z.string() }).nullable(),
  /** Held past its refresh because its process still runs on this machine. */
  keptByProcess: z.boolean(),
  /** Since the lease's last refresh, or since the release (the pool filesystem's clock). */
  leaseAgeMs: z.number(),
  /** The task it belongs to (it re-takes it first). */
  owner: z.string().nullable(),
  /** The snapshot last restored into it, with the catalog's row when this catalog has it. */
  snapshot: z
    .object({
      id: z.string(),
      head: z.string().nullable(),
      tree: z.string(),
      catalog: z
        .object({
          class: z.string(),
          state: z.string(),
          workContextId: z.string().nullable(),
          canonicalRef: z.string().nullable(),
          sequence: z.number().nullable(),
        })
        .nullable(),
    })
    .nullable(),
  createdAt: z.number(),
  releasedAt: z.number().nullable(),
});

export const repositoryPoolSchema = z.object({
  repository: z.object({ id: z.string(), identity: z.string(), name: z.string() }),
  /** The host this server runs on (STRATA_HOST), whose pool this is. */
  host: z.string(),
  /** The pool's directory on that host. */
  directory: z.string(),
  worktrees: z.array(pooledWorktreeSchema),
});
export type RepositoryPool = z.infer<typeof repositoryPoolSchema>;

export interface RepositoryPoolOptions extends z.input<typeof repositoryPoolInput> {
  /** This server's data directory (STRATA_DATA_DIR): its pool is `poolDirectory(dataDir)`. */
  dataDir: string;
  /** This server's host name (STRATA_HOST). */
  host: string;
}

// One pool handle per directory and host, so its filesystem clock is probed once a minute, not
// on every page view.
const pools = new Map<string, Promise<WorktreePool>>();

function poolOf(dataDir: string, host: string) {
  const dir = poolDirectory(dataDir);
  const key = `${host}\0${dir}`;
  let pool = pools.get(key);
  if (!pool) {
    pool = openWorktreePool({ dir, host });
    pools.set(key, pool);
    pool.catch(() => pools.delete(key));
  }
  return pool;
}

async function statusOf(w: PoolWorktree): Promise<{ status: PoolStatus; detail: string | null }> {
  if (w.state !== "free") return { status: w.state, detail: null };
  const judged = await judgeCleanliness(w.path, w.snapshot);
  switch (judged.state) {
    case "clean":
    case "dirty":
    case "empty":
      return { status: `idle-${judged.state}`, detail: judged.detail };
    default:
      return { status: judged.state, detail: judged.detail };
  }
}

export async function repositoryPool(db: Db, opts: RepositoryPoolOptions): Promise<RepositoryPool> {
  const { repositoryId } = repositoryPoolInput.parse({ repositoryId: opts.repositoryId });
  const repository = await db.repository.findUnique({
    where: { id: repositoryId },
    select: { id: true, identity: true, name: true },
  });
  if (!repository) throw new StrataError("NOT_FOUND", `Repository ${repositoryId} was not found.`);

  const pool = await poolOf(opts.dataDir, opts.host);
  const listing = await listPool(pool, { repository: repository.identity });
  const snapshotIds = [...new Set(listing.worktrees.flatMap((w) => (w.snapshot ? [w.snapshot.id] : [])))];
  const [statuses, snapshots] = await Promise.all([
    Promise.all(listing.worktrees.map((w) => statusOf(w))),
    db.snapshot.findMany({
      where: { id: { in: snapshotIds }, repositoryId: repository.id },
      select: { id: true, class: true, state: true, workContextId: true, canonicalRef: true, sequence: true },
    }),
  ]);
  const known = new Map(snapshots.map(({ id, ...row }) => [id, row]));
  return {
    repository,
    host: pool.me.host,
    directory: pool.dir,
    worktrees: listing.worktrees.map((w, i) => ({
      name: w.name,
      path: w.path,
      state: w.state,
      ...statuses[i]!,
      marked: w.marked,
      holder: w.holder,
      keptByProcess: w.keptByProcess,
      leaseAgeMs: w.leaseAgeMs,
      owner: w.owner,
      snapshot: w.snapshot ? { ...w.snapshot, catalog: known.get(w.snapshot.id) ?? null } : null,
      createdAt: w.createdAt,
      releasedAt: w.releasedAt,
    })),
  };
}
