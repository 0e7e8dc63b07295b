-- Artifacts by backend kind (server/backends/): a snapshot names the backend that minted its
-- artifact and the artifact's opaque reference (rows from before keep kind git and no reference:
-- a restore finds their manifest as before), and records the reclaim of the artifact through
-- that backend: when it was deleted, and the last failure to (retried by the next sweep).
-- AlterTable
ALTER TABLE "snapshots" ADD COLUMN     "artifact_deleted_at" TIMESTAMP(3),
ADD COLUMN     "artifact_kind" TEXT NOT NULL DEFAULT 'git',
ADD COLUMN     "artifact_ref" TEXT,
ADD COLUMN     "reclaim_attempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "reclaim_error" TEXT;

-- AlterTable
ALTER TABLE "dependency_caches" ADD COLUMN     "reclaim_attempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "reclaim_error" TEXT;

-- The sweep looks for artifacts of deleted snapshots not yet reclaimed.
CREATE INDEX "snapshots_artifact_unreclaimed" ON "snapshots"("state") WHERE "artifact_deleted_at" IS NULL AND "artifact_ref" IS NOT NULL;
