-- Authorized forks (server/lineage/fork-checkpoint.ts): a lineage may begin from a ready
-- checkpoint of another work context when an agent or an operator decided so. The lineage
-- records the checkpoint, the reason and who decided; the restore ladder gives a fork that has
-- no checkpoint of its own the checkpoint it was forked from.
-- SQLite adds a column with a foreign key only when its default is NULL (it is), and a CHECK
-- as a column constraint; the one on "forked_by" names the other two columns as well.
ALTER TABLE "lineages" ADD COLUMN "forked_from_id" TEXT CONSTRAINT "lineages_forked_from_id_fkey" REFERENCES "snapshots" ("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "lineages" ADD COLUMN "fork_reason" TEXT;
-- Hand-written: a fork record is whole (checkpoint, a non-blank reason and who) or absent.
ALTER TABLE "lineages" ADD COLUMN "forked_by" TEXT CONSTRAINT "lineages_fork_check" CHECK (("forked_from_id" IS NULL AND "fork_reason" IS NULL AND "forked_by" IS NULL) OR ("forked_from_id" IS NOT NULL AND "fork_reason" IS NOT NULL AND "forked_by" IS NOT NULL AND length(trim("fork_reason")) > 0));

-- CreateIndex
CREATE INDEX "lineages_forked_from_id_idx" ON "lineages"("forked_from_id");

-- Hand-written: the decision is history. A lineage's fork record never changes once written
-- (isOneWayStateViolation recognises the message, as for the other one-way rules).
CREATE TRIGGER "lineages_fork_fixed" BEFORE UPDATE ON "lineages"
WHEN NEW."forked_from_id" IS NOT OLD."forked_from_id" OR NEW."fork_reason" IS NOT OLD."fork_reason"
  OR NEW."forked_by" IS NOT OLD."forked_by"
BEGIN SELECT RAISE(ABORT, 'one-way state: a lineage keeps the fork it was created with'); END;
