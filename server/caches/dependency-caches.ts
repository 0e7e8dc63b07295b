// Dependency caches: a repository's installed dependency and build directories (node_modules,
// .venv, target…) as an artifact of the backend that minted it, keyed by the environment they
// were installed for (envHash, from the lockfiles and toolchain files). Reproducible cache state,
// not the only copy of anything: a restore adds a cache to a checkout whose envHash matches, and
// a checkout whose lockfile changed finds none and installs.
//
// Publishing records which stored blobs the artifact needs beyond the cache it is layered on
// (the backend reads them from the artifact's own records, so a caller cannot name content it
// does not hold), checks the agent holds every one, locks them against collection, and
// supersedes the key's previous ready cache, in one transaction.
import { z } from "zod";
import { backendFor } from "../backends/registry.ts";
import { catalogContentStore } from "../backends/content-store.ts";
import { grantedDigests } from "../content/blobs.ts";
import { inTransaction, type Db } from "../db/client.ts";
import { dialectOf } from "../db/dialect.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { slices } from "../db/sql.ts";
import { lockStoredDigests } from "../db/statements/content.ts";
import { clientFields } from "../domain/client-fields.ts";
import { blobDigestSchema } from "../domain/content.ts";
import { isStrataError, StrataError } from "../domain/errors.ts";
import type { AgentScope } from "../domain/scope.ts";
import { repositoryRefSchema } from "../domain/snapshot-keys.ts";
import { findOrCreateRepository } from "../lineage/repositories.ts";

/** Paths below a checkout a cache may hold: relative, normal, one to four components. */
const cachePathSchema = z
  .string()
  .min(1)
  .max(200)
  .refine((p) => !p.startsWith("/") && p.split("/").every((c) => c !== "" && c !== "." && c !== ".."), {
    message: "must be a relative path below the checkout",
  });

export const DEFAULT_CACHE_PATHS = ["node_modules", ".venv", "venv", "target", ".next/cache", "vendor/bundle"];

const cacheKeySchema = z.strictObject({ repository: repositoryRefSchema, envHash: blobDigestSchema });

export const publishDependencyCacheInput = cacheKeySchema.extend({
  paths: z.array(cachePathSchema).min(1).max(20),
  artifact: z.strictObject({
    kind: z.string().min(1).max(50),
    ref: z.string().min(1).max(200),
    sizeBytes: z.number().int().nonnegative(),
  }),
});
export type PublishDependencyCacheInput = z.input<typeof publishDependencyCacheInput>;

export const findDependencyCacheInput = z
  .strictObject({
    /** The repository, or one of the agent's snapshots of it. */
    repository: repositoryRefSchema.optional(),
    snapshotId: z.string().uuid().optional(),
    /** The checkout's envHash; null asks only for the repository's latest cache (a delta's base). */
    envHash: blobDigestSchema.nullable(),
  })
  .refine((v) => (v.repository === undefined) !== (v.snapshotId === undefined), {
    message: "name the repository or a snapshot of it, not both",
  });

export const dependencyCacheSchema = z.object({
  id: z.string(),
  envHash: z.string(),
  paths: z.array(z.string()),
  kind: z.string(),
  ref: z.string(),
  sizeBytes: z.number(),
  createdAt: z.date(),
});
export type DependencyCache = z.infer<typeof dependencyCacheSchema>;

export const publishDependencyCacheResultSchema = z.object({
  outcome: z.enum(["published", "unchanged"]),
  cache: dependencyCacheSchema,
  /** Blobs the catalog now keeps for it (beyond the cache it is layered on). */
  blobs: z.number(),
});

const select = {
  id: true,
  envHash: true,
  paths: true,
  artifactKind: true,
  artifactRef: true,
  sizeBytes: true,
  createdAt: true,
} as const;

function view(row: {
  id: string;
  envHash: string;
  paths: unknown;
  artifactKind: string;
  artifactRef: string;
  sizeBytes: bigint | number;
  createdAt: Date;
}): DependencyCache {
  return {
    id: row.id,
    envHash: row.envHash,
    paths: Array.isArray(row.paths) ? row.paths.filter((p): p is string => typeof p === "string") : [],
    kind: row.artifactKind,
    ref: row.artifactRef,
    sizeBytes: Number(row.sizeBytes),
    createdAt: row.createdAt,
  };
}

/**
 * The agent's ready cache for the key (`exact`), and its most recent ready cache of the
 * repository whatever the envHash (`latest`: what a new capture is layered on).
 */
export async function findDependencyCache(
  db: Db,
  input: z.input<typeof findDependencyCacheInput> & { agent: AgentScope },
): Promise<{ exact: DependencyCache | null; latest: DependencyCache | null }> {
  const { repository, snapshotId, envHash } = findDependencyCacheInput.parse(clientFields(input, "agent"));
  const agentId = input.agent.agentId;
  const repositoryId = snapshotId
    ? (await db.snapshot.findFirst({ where: { id: snapshotId, agentId }, select: { repositoryId: true } }))
        ?.repositoryId
    : undefined;
  if (snapshotId && !repositoryId) return { exact: null, latest: null };
  const where = {
    agentId,
    state: "ready",
    ...(repositoryId ? { repositoryId } : { repository: { identity: repository!.identity } }),
  };
  const [exact, latest] = await Promise.all([
    envHash ? db.dependencyCache.findFirst({ where: { ...where, envHash }, select }) : null,
    db.dependencyCache.findFirst({ where, select, orderBy: [{ createdAt: "desc" }, { id: "desc" }] }),
  ]);
  return { exact: exact && view(exact), latest: latest && view(latest) };
}

/** Publishes a cache for the key (superseding the previous one); `unchanged` when it is the same artifact. */
export async function publishDependencyCache(
  db: Db,
  raw: PublishDependencyCacheInput & { agent: AgentScope },
): Promise<z.infer<typeof publishDependencyCacheResultSchema>> {
  const input = publishDependencyCacheInput.parse(clientFields(raw, "agent"));
  const agentId = raw.agent.agentId;
  const backend = backendFor(input.artifact.kind);
  if (!backend.capabilities.dependencyCaches) {
    throw new StrataError("INVALID_INPUT", `A ${backend.kind} artifact cannot hold dependency directories.`, {
      hint: "Capture the dependency directories with the dir backend.",
    });
  }
  // Earlier caches of the agent that still keep their content: a layered artifact's base.
  const kept = async (ref: string) =>
    (await db.dependencyCache.count({
      where: { agentId, artifactKind: backend.kind, artifactRef: ref, state: { not: "deleted" } },
    })) > 0;
  const content = await backend
    .content(input.artifact.ref, { source: catalogContentStore(db, agentId), known: kept })
    .catch((error: unknown) => {
      // The caller named an artifact whose records are not one: its input is wrong.
      if (!isStrataError(error, "INVALID_SNAPSHOT") && !isStrataError(error, "BLOB_CORRUPT")) throw error;
      throw new StrataError(
        "INVALID_INPUT",
        `The artifact ${input.artifact.ref.slice(0, 80)} cannot be a cache: ${error.message}`,
        {
          hint: "Name the record a dir capture of the dependency directories stored.",
        },
      );
    });

  return inTransaction(db, async (tx) => {
    const repository = await findOrCreateRepository(tx, input.repository);
    const key = { agentId, repositoryId: repository.id, envHash: input.envHash };
    const current = await tx.dependencyCache.findFirst({ where: { ...key, state: "ready" }, select });
    if (current && current.artifactKind === backend.kind && current.artifactRef === input.artifact.ref) {
      return { outcome: "unchanged" as const, cache: view(current), blobs: 0 };
    }
    // Every blob must be the agent's own and stored; locked so collection cannot take it now.
    const granted = await grantedDigests(tx, agentId, content.digests);
    const lacking = content.digests.filter((d) => !granted.has(d));
    for (const slice of slices(
      content.digests.filter((d) => granted.has(d)),
      500,
    )) {
      const locked = new Set(await lockStoredDigests(tx, slice));
      lacking.push(...slice.filter((d) => !locked.has(d)));
    }
    if (lacking.length > 0) {
      throw new StrataError(
        "BLOB_MISSING",
        `The cache's artifact needs ${lacking.length} blob(s) that are not stored.`,
        {
          hint: "Upload them (the capture does), then publish again. Nothing was recorded.",
          data: { digests: lacking.slice(0, 100) },
        },
      );
    }
    const base = content.base
      ? await tx.dependencyCache.findFirst({
          where: { agentId, artifactKind: backend.kind, artifactRef: content.base, state: { not: "deleted" } },
          select: { id: true },
          orderBy: { createdAt: "desc" },
        })
      : null;
    // Locked, so the sweep cannot reclaim the base before this cache (which needs it) commits;
    // a base reclaimed between reading the records and now is judged again.
    const parent = base && (await dialectOf(tx).lockRow<{ state: string }>(tx, "dependency_caches", base.id, "state"));
    if (content.base && (!parent || parent.state === "deleted")) {
      throw new RetryTransaction("the cache's base was reclaimed meanwhile");
    }
    const now = new Date();
    if (current) {
      await tx.dependencyCache.update({ where: { id: current.id }, data: { state: "superseded", supersededAt: now } });
    }
    try {
      const row = await tx.dependencyCache.create({
        data: {
          ...key,
          paths: input.paths,
          artifactKind: backend.kind,
          artifactRef: input.artifact.ref,
          parentId: base?.id ?? null,
          sizeBytes: BigInt(input.artifact.sizeBytes),
        },
        select,
      });
      for (const slice of slices(content.digests, 500)) {
        await tx.dependencyCacheBlob.createMany({ data: slice.map((digest) => ({ cacheId: row.id, digest })) });
      }
      return { outcome: "published" as const, cache: view(row), blobs: content.digests.length };
    } catch (error) {
      if (isUniqueViolation(error)) throw new RetryTransaction("a cache for the key was published concurrently");
      throw error;
    }
  });
}
