-- Live holds (server/lineage/hold-workspace.ts): a paused work context keeps its live workspace
-- for a while after its pause checkpoint was appended (14 days on an idle-persistent provider,
-- one hour otherwise). A hold names the checkpoint it protects (through the pin `pin_id`, with
-- the same expiry), the host and the directory; acquire offers that directory first on that
-- host. Ending one (released, resumed by an acquire or a resume, replaced by a newer hold of the
-- lineage, or recorded as expired) is final.
-- CreateTable
CREATE TABLE "live_holds" (
    "id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "work_context_id" TEXT NOT NULL,
    "lineage_id" TEXT NOT NULL,
    "snapshot_id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "workspace" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "idle_persistent" BOOLEAN NOT NULL,
    "pin_id" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "ended_at" TIMESTAMP(3),
    "end_reason" TEXT,

    CONSTRAINT "live_holds_pkey" PRIMARY KEY ("id"),
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

-- AddForeignKey
ALTER TABLE "live_holds" ADD CONSTRAINT "live_holds_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "live_holds" ADD CONSTRAINT "live_holds_lineage_id_fkey" FOREIGN KEY ("lineage_id") REFERENCES "lineages"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "live_holds" ADD CONSTRAINT "live_holds_snapshot_id_fkey" FOREIGN KEY ("snapshot_id") REFERENCES "snapshots"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Hand-written: at most one unended hold per lineage (a new one ends the one before); acquire
-- finds a lineage's hold by this index.
CREATE UNIQUE INDEX "live_holds_one_unended" ON "live_holds"("lineage_id") WHERE "ended_at" IS NULL;

-- Hand-written: a hold never changes what it holds, and once ended it stays ended, with the
-- time and the reason it ended (isOneWayStateViolation recognises the message).
CREATE FUNCTION "strata_live_holds_one_way"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."agent_id" <> OLD."agent_id" OR NEW."lineage_id" <> OLD."lineage_id"
     OR NEW."snapshot_id" <> OLD."snapshot_id" OR NEW."host" <> OLD."host"
     OR NEW."workspace" <> OLD."workspace" OR NEW."pin_id" <> OLD."pin_id"
     OR NEW."expires_at" <> OLD."expires_at" THEN
    RAISE EXCEPTION 'one-way state: live hold % keeps what it holds and its expiry', OLD."id"
      USING ERRCODE = 'check_violation';
  END IF;
  IF OLD."ended_at" IS NOT NULL AND (NEW."ended_at" IS DISTINCT FROM OLD."ended_at"
     OR NEW."end_reason" IS DISTINCT FROM OLD."end_reason") THEN
    RAISE EXCEPTION 'one-way state: live hold % ended for good', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "live_holds_one_way" BEFORE UPDATE ON "live_holds" FOR EACH ROW EXECUTE FUNCTION "strata_live_holds_one_way"();
