-- Blob grants: an agent may read, find present and publish only the blobs it uploaded (or the
-- server stored for it). A digest is unique only among stored blob rows, so there is no foreign
-- key to blobs; collection deletes a digest's grants with its stored blob.
CREATE TABLE "blob_grants" (
    "agent_id" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "blob_grants_pkey" PRIMARY KEY ("agent_id","digest"),
    CONSTRAINT "blob_grants_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE CASCADE ON UPDATE CASCADE
);

CREATE INDEX "blob_grants_digest_idx" ON "blob_grants"("digest");

-- Hand-written backfill: every agent keeps the content of its own snapshots (the manifest, every
-- layer reachable from the heads, the digests the manifest lists), so restores and re-publishes
-- of existing snapshots go on working. Only stored digests get a grant, as after collection.
-- Blobs uploaded but not yet published are not granted: a client asks blob.missing and uploads
-- them again.
INSERT INTO "blob_grants" ("agent_id", "digest")
WITH RECURSIVE "reached" ("agent_id", "uuid") AS (
    SELECT s."agent_id", h."layer_uuid" FROM "snapshots" s JOIN "snapshot_heads" h ON h."snapshot_id" = s."id"
    UNION
    SELECT r."agent_id", l."parent_uuid" FROM "reached" r JOIN "layers" l ON l."uuid" = r."uuid" WHERE l."parent_uuid" IS NOT NULL
), "owned" ("agent_id", "digest") AS (
    SELECT r."agent_id", l."digest" FROM "reached" r JOIN "layers" l ON l."uuid" = r."uuid"
    UNION
    SELECT s."agent_id", s."manifest_digest" FROM "snapshots" s WHERE s."manifest_digest" IS NOT NULL
    UNION
    SELECT s."agent_id", e."value" FROM "snapshots" s CROSS JOIN LATERAL jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(s."metadata" -> 'manifest' -> 'blobDigests') = 'array'
        THEN s."metadata" -> 'manifest' -> 'blobDigests' ELSE '[]'::jsonb END) AS e("value")
    WHERE s."metadata" IS NOT NULL
)
SELECT o."agent_id", o."digest" FROM "owned" o
WHERE EXISTS (SELECT 1 FROM "blobs" b WHERE b."digest" = o."digest" AND b."state" = 'stored');
