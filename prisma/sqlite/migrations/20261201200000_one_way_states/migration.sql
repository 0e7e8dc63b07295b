-- Hand-written: the catalog's one-way state rules, held by the database as well as the code.
-- Every refusal's message starts "one-way state:", which server/db/errors.ts recognises
-- (isOneWayStateViolation). Pins (no reopening) and layers (available -> deleting -> deleted)
-- are guarded since the catalog migration (their guards recreated by 20261201100000).

-- A snapshot's state only moves forward, along exactly the moves the services make:
--   capturing -> ready | superseded | retired | failed | deleting | deleted
--   ready      -> superseded | retired
--   superseded -> retired | deleting
--   failed     -> retired | deleting
--   retired    -> deleting
--   deleting   -> deleted
--   deleted: final.
-- Its class (baseline or checkpoint) and its owner never change.
CREATE TRIGGER "snapshots_one_way_class" BEFORE UPDATE ON "snapshots"
WHEN NEW."class" <> OLD."class" OR NEW."agent_id" <> OLD."agent_id"
BEGIN SELECT RAISE(ABORT, 'one-way state: a snapshot never changes class or owner'); END;
CREATE TRIGGER "snapshots_one_way_state" BEFORE UPDATE OF "state" ON "snapshots"
WHEN NOT (NEW."state" = OLD."state"
  OR (OLD."state" = 'capturing' AND NEW."state" IN ('ready', 'superseded', 'retired', 'failed', 'deleting', 'deleted'))
  OR (OLD."state" = 'ready' AND NEW."state" IN ('superseded', 'retired'))
  OR (OLD."state" = 'superseded' AND NEW."state" IN ('retired', 'deleting'))
  OR (OLD."state" = 'failed' AND NEW."state" IN ('retired', 'deleting'))
  OR (OLD."state" = 'retired' AND NEW."state" = 'deleting')
  OR (OLD."state" = 'deleting' AND NEW."state" = 'deleted'))
BEGIN SELECT RAISE(ABORT, 'one-way state: a snapshot cannot go from ' || OLD."state" || ' to ' || NEW."state"); END;

-- A retired lineage is never active again, and why and when it ended never change.
CREATE TRIGGER "lineages_one_way" BEFORE UPDATE ON "lineages"
WHEN OLD."state" = 'retired' AND (NEW."state" <> 'retired'
  OR NEW."retired_reason" IS NOT OLD."retired_reason" OR NEW."retired_at" IS NOT OLD."retired_at")
BEGIN SELECT RAISE(ABORT, 'one-way state: a retired lineage is retired for good'); END;

-- A closed pin keeps the time it was closed (reopening it is pins_no_reopen's refusal).
CREATE TRIGGER "pins_one_way" BEFORE UPDATE ON "pins"
WHEN OLD."released" = 1 AND NEW."released" = 1 AND NEW."released_at" IS NOT OLD."released_at"
BEGIN SELECT RAISE(ABORT, 'one-way state: a released pin keeps its release time'); END;

-- A stored blob never goes back to uploading, and its digest, size and chunks never change.
CREATE TRIGGER "blobs_one_way" BEFORE UPDATE ON "blobs"
WHEN OLD."state" = 'stored' AND (NEW."state" <> 'stored' OR NEW."digest" <> OLD."digest"
  OR NEW."size_bytes" IS NOT OLD."size_bytes" OR NEW."chunk_count" IS NOT OLD."chunk_count")
BEGIN SELECT RAISE(ABORT, 'one-way state: a stored blob is stored for good'); END;

-- A restore's outcome is reported once: pending -> restored | degraded | unrestored | failed,
-- then final; a discarded restore stays discarded.
CREATE TRIGGER "restores_one_way" BEFORE UPDATE ON "restores"
WHEN (OLD."outcome" <> 'pending' AND NEW."outcome" <> OLD."outcome")
  OR (OLD."discarded_at" IS NOT NULL AND NEW."discarded_at" IS NOT OLD."discarded_at")
BEGIN SELECT RAISE(ABORT, 'one-way state: a reported restore keeps its outcome'); END;

-- A collection run ends once: running -> finished | failed, then final.
CREATE TRIGGER "collection_runs_one_way" BEFORE UPDATE ON "collection_runs"
WHEN OLD."status" <> 'running' AND NEW."status" <> OLD."status"
BEGIN SELECT RAISE(ABORT, 'one-way state: a finished collection run stays finished'); END;
