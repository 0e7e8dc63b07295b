-- Dependency caches (server/caches/): installed dependency and build directories of a
-- repository's baseline, by envHash, as an artifact of the backend that minted it, with the
-- blobs it needs beyond its parent's (kept from collection while the cache is not deleted).
-- CreateTable
CREATE TABLE "dependency_caches" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "agent_id" TEXT NOT NULL,
    "repository_id" TEXT NOT NULL,
    "env_hash" TEXT NOT NULL,
    "paths" JSONB NOT NULL,
    "artifact_kind" TEXT NOT NULL,
    "artifact_ref" TEXT NOT NULL,
    "parent_id" TEXT,
    "size_bytes" BIGINT NOT NULL DEFAULT 0,
    "state" TEXT NOT NULL DEFAULT 'ready',
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "superseded_at" DATETIME,
    "deleted_at" DATETIME,
    "last_restored_at" DATETIME,
    CONSTRAINT "dependency_caches_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents" ("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "dependency_caches_repository_id_fkey" FOREIGN KEY ("repository_id") REFERENCES "repositories" ("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "dependency_caches_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "dependency_caches" ("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "dependency_caches_state_check" CHECK ("state" IN ('ready', 'superseded', 'deleted'))
);

-- CreateTable
CREATE TABLE "dependency_cache_blobs" (
    "cache_id" TEXT NOT NULL,
    "digest" TEXT NOT NULL,

    PRIMARY KEY ("cache_id", "digest"),
    CONSTRAINT "dependency_cache_blobs_cache_id_fkey" FOREIGN KEY ("cache_id") REFERENCES "dependency_caches" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "dependency_caches_agent_id_repository_id_state_created_at_idx" ON "dependency_caches"("agent_id", "repository_id", "state", "created_at");

-- CreateIndex
CREATE INDEX "dependency_caches_parent_id_idx" ON "dependency_caches"("parent_id");

-- CreateIndex
CREATE INDEX "dependency_cache_blobs_digest_idx" ON "dependency_cache_blobs"("digest");

-- At most one ready cache per key; states only as listed.
CREATE UNIQUE INDEX "dependency_caches_one_ready" ON "dependency_caches"("agent_id", "repository_id", "env_hash") WHERE "state" = 'ready';
