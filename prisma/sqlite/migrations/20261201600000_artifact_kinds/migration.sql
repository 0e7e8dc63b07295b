-- Artifacts by backend kind (server/backends/): a snapshot names the backend that minted its
-- artifact and the artifact's opaque reference (rows from before keep kind git and no reference:
-- a restore finds their manifest as before), and records the reclaim of the artifact through
-- that backend: when it was deleted, and the last failure to (retried by the next sweep).
-- Added column by column (SQLite's ALTER TABLE), so the table's triggers and indexes stay.
ALTER TABLE "snapshots" ADD COLUMN "artifact_deleted_at" DATETIME;
ALTER TABLE "snapshots" ADD COLUMN "artifact_kind" TEXT NOT NULL DEFAULT 'git';
ALTER TABLE "snapshots" ADD COLUMN "artifact_ref" TEXT;
ALTER TABLE "snapshots" ADD COLUMN "reclaim_attempts" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "snapshots" ADD COLUMN "reclaim_error" TEXT;
ALTER TABLE "dependency_caches" ADD COLUMN "reclaim_attempts" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "dependency_caches" ADD COLUMN "reclaim_error" TEXT;

-- The sweep looks for artifacts of deleted snapshots not yet reclaimed.
CREATE INDEX "snapshots_artifact_unreclaimed" ON "snapshots"("state") WHERE "artifact_deleted_at" IS NULL AND "artifact_ref" IS NOT NULL;
