-- Authorized forks (server/lineage/fork-checkpoint.ts): a lineage may begin from a ready
-- checkpoint of another work context when an agent or an operator decided so. The lineage
-- records the checkpoint, the reason and who decided; the restore ladder gives a fork that has
-- no checkpoint of its own the checkpoint it was forked from.
ALTER TABLE "lineages" ADD COLUMN "forked_from_id" TEXT,
    ADD COLUMN "fork_reason" TEXT,
    ADD COLUMN "forked_by" TEXT;

-- Hand-written: a fork record is whole (checkpoint, a non-blank reason and who) or absent.
ALTER TABLE "lineages" ADD CONSTRAINT "lineages_fork_check" CHECK (("forked_from_id" IS NULL AND "fork_reason" IS NULL AND "forked_by" IS NULL) OR ("forked_from_id" IS NOT NULL AND "fork_reason" IS NOT NULL AND "forked_by" IS NOT NULL AND length(trim("fork_reason")) > 0));

-- CreateIndex
CREATE INDEX "lineages_forked_from_id_idx" ON "lineages"("forked_from_id");

-- AddForeignKey
ALTER TABLE "lineages" ADD CONSTRAINT "lineages_forked_from_id_fkey" FOREIGN KEY ("forked_from_id") REFERENCES "snapshots"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Hand-written: the decision is history. A lineage's fork record never changes once written
-- (isOneWayStateViolation recognises the message, as for the other one-way rules).
CREATE FUNCTION "strata_lineages_fork_fixed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."forked_from_id" IS DISTINCT FROM OLD."forked_from_id"
     OR NEW."fork_reason" IS DISTINCT FROM OLD."fork_reason"
     OR NEW."forked_by" IS DISTINCT FROM OLD."forked_by" THEN
    RAISE EXCEPTION 'one-way state: lineage % keeps the fork it was created with', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "lineages_fork_fixed" BEFORE UPDATE ON "lineages" FOR EACH ROW EXECUTE FUNCTION "strata_lineages_fork_fixed"();
