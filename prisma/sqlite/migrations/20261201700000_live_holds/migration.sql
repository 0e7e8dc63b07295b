-- Live holds (server/lineage/hold-workspace.ts): a paused work context keeps its live workspace
-- for a while after its pause checkpoint was appended (14 days on an idle-persistent provider,
-- one hour otherwise). A hold names the checkpoint it protects (through the pin `pin_id`, with
-- the same expiry), the host and the directory; acquire offers that directory first on that
-- host. Ending one (released, resumed by an acquire or a resume, replaced by a newer hold of the
-- lineage, or recorded as expired) is final.
-- CreateTable
CREATE TABLE "live_holds" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "agent_id" TEXT NOT NULL,
    "work_context_id" TEXT NOT NULL,
    "lineage_id" TEXT NOT NULL,
    "snapshot_id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "workspace" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "idle_persistent" BOOLEAN NOT NULL,
    "pin_id" TEXT NOT NULL,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" DATETIME NOT NULL,
    "ended_at" DATETIME,
    "end_reason" TEXT,
    CONSTRAINT "live_holds_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents" ("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "live_holds_lineage_id_fkey" FOREIGN KEY ("lineage_id") REFERENCES "lineages" ("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "live_holds_snapshot_id_fkey" FOREIGN KEY ("snapshot_id") REFERENCES "snapshots" ("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    -- Hand-written: an end is whole (when and why) or absent, and a hold lasts some time.
    CONSTRAINT "live_holds_end_check" CHECK (("ended_at" IS NULL AND "end_reason" IS NULL) OR ("ended_at" IS NOT NULL AND "end_reason" IS NOT NULL AND "end_reason" IN ('released', 'resumed', 'replaced', 'expired'))),
    CONSTRAINT "live_holds_expiry_check" CHECK ("expires_at" > "created_at")
);

-- CreateIndex
CREATE INDEX "live_holds_snapshot_id_idx" ON "live_holds"("snapshot_id");

-- CreateIndex
CREATE INDEX "live_holds_agent_id_created_at_idx" ON "live_holds"("agent_id", "created_at");

-- CreateIndex
CREATE INDEX "live_holds_created_at_idx" ON "live_holds"("created_at");

-- Hand-written: at most one unended hold per lineage (a new one ends the one before); acquire
-- finds a lineage's hold by this index.
CREATE UNIQUE INDEX "live_holds_one_unended" ON "live_holds"("lineage_id") WHERE "ended_at" IS NULL;

-- Hand-written: a hold never changes what it holds, and once ended it stays ended, with the
-- time and the reason it ended (isOneWayStateViolation recognises the message).
CREATE TRIGGER "live_holds_one_way" BEFORE UPDATE ON "live_holds"
WHEN NEW."agent_id" <> OLD."agent_id" OR NEW."lineage_id" <> OLD."lineage_id"
  OR NEW."snapshot_id" <> OLD."snapshot_id" OR NEW."host" <> OLD."host"
  OR NEW."workspace" <> OLD."workspace" OR NEW."pin_id" <> OLD."pin_id"
  OR NEW."expires_at" <> OLD."expires_at"
  OR (OLD."ended_at" IS NOT NULL AND (NEW."ended_at" IS NOT OLD."ended_at" OR NEW."end_reason" IS NOT OLD."end_reason"))
BEGIN SELECT RAISE(ABORT, 'one-way state: a live hold keeps what it holds, and once ended stays ended'); END;
