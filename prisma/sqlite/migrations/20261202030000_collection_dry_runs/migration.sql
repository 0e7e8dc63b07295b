-- Collection runs record dry runs (what a run would do, computed and rolled back) beside real
-- ones, and every figure a run reports: expired pins, released snapshots, the declared bytes of
-- the layers deleted (bytes_freed counts the stored blobs deleted) and abandoned uploads.
ALTER TABLE "collection_runs" ADD COLUMN "dry_run" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "collection_runs" ADD COLUMN "pins_expired" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "collection_runs" ADD COLUMN "snapshots_released" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "collection_runs" ADD COLUMN "layer_bytes" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "collection_runs" ADD COLUMN "uploads_abandoned" INTEGER NOT NULL DEFAULT 0;
