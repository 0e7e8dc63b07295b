-- Content storage (blobs, layers, pins, collection): indexes only, no table is rebuilt.

-- Collection asks whether any snapshot still names a blob as its manifest.
CREATE INDEX "snapshots_manifest_digest_idx" ON "snapshots"("manifest_digest");

-- Hand-written: active pins that carry an expiry, for the collector's release of expired pins
-- (the pins table keeps every closed pin for ever, so a scan would grow without bound).
CREATE INDEX "pins_active_expiry" ON "pins"("expires_at") WHERE "released" = false AND "expires_at" IS NOT NULL;
