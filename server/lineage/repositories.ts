// Repositories are found or created by their credential-free identity.
import type { Db } from "../db/client.ts";
import { isUniqueViolation, RetryTransaction } from "../db/errors.ts";
import { repositoryDisplayName, type RepositoryRef } from "../domain/snapshot-keys.ts";

export interface RepositoryRow {
  id: string;
  identity: string;
  name: string;
}

/**
 * Returns the repository with this identity, creating it on first use. Call it inside a
 * transaction (inTransaction): losing a concurrent insert asks the owner to retry the whole
 * transaction, which then finds the winner's row.
 */
export async function findOrCreateRepository(tx: Db, ref: RepositoryRef): Promise<RepositoryRow> {
  const select = { id: true, identity: true, name: true } as const;
  const existing = await tx.repository.findUnique({ where: { identity: ref.identity }, select });
  if (existing) return existing;
  try {
    return await tx.repository.create({ data: { identity: ref.identity, name: repositoryDisplayName(ref) }, select });
  } catch (error) {
    if (isUniqueViolation(error)) throw new RetryTransaction("repository created concurrently");
    throw error;
  }
}

/** Finds a repository by identity without creating it. */
export async function findRepository(db: Db, identity: string): Promise<RepositoryRow | null> {
  return db.repository.findUnique({ where: { identity }, select: { id: true, identity: true, name: true } });
}
