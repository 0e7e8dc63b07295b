-- Hand-written: the catalog's one-way state rules, held by the database as well as the code.
-- Every refusal is check_violation (23514) with a message starting "one-way state:", which
-- server/db/errors.ts recognises (isOneWayStateViolation). Pins (no reopening) and layers
-- (available -> deleting -> deleted) are guarded since the catalog migration (pins_guard,
-- layers_guard).

-- A snapshot's state only moves forward, along exactly the moves the services make:
--   capturing -> ready | superseded | retired | failed | deleting | deleted
--                (published, imported as superseded, retired with its lineage, failed, or an
--                abandoned capture handed straight to collection)
--   ready      -> superseded | retired
--   superseded -> retired | deleting
--   failed     -> retired | deleting
--   retired    -> deleting
--   deleting   -> deleted
--   deleted: final.
-- Its class (baseline or checkpoint) and its owner never change.
CREATE FUNCTION "strata_snapshots_one_way"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."class" <> OLD."class" THEN
    RAISE EXCEPTION 'one-way state: snapshot % cannot change class from % to %', OLD."id", OLD."class", NEW."class"
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW."agent_id" <> OLD."agent_id" THEN
    RAISE EXCEPTION 'one-way state: snapshot % cannot change owner', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  IF NOT (NEW."state" = OLD."state"
          OR (OLD."state" = 'capturing' AND NEW."state" IN ('ready', 'superseded', 'retired', 'failed', 'deleting', 'deleted'))
          OR (OLD."state" = 'ready' AND NEW."state" IN ('superseded', 'retired'))
          OR (OLD."state" = 'superseded' AND NEW."state" IN ('retired', 'deleting'))
          OR (OLD."state" = 'failed' AND NEW."state" IN ('retired', 'deleting'))
          OR (OLD."state" = 'retired' AND NEW."state" = 'deleting')
          OR (OLD."state" = 'deleting' AND NEW."state" = 'deleted')) THEN
    RAISE EXCEPTION 'one-way state: snapshot % cannot go from % to %', OLD."id", OLD."state", NEW."state"
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "snapshots_one_way" BEFORE UPDATE ON "snapshots" FOR EACH ROW EXECUTE FUNCTION "strata_snapshots_one_way"();

-- A retired lineage is never active again, and why and when it ended never change.
CREATE FUNCTION "strata_lineages_one_way"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD."state" = 'retired' AND (NEW."state" <> 'retired'
     OR NEW."retired_reason" IS DISTINCT FROM OLD."retired_reason"
     OR NEW."retired_at" IS DISTINCT FROM OLD."retired_at") THEN
    RAISE EXCEPTION 'one-way state: lineage % is retired for good', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "lineages_one_way" BEFORE UPDATE ON "lineages" FOR EACH ROW EXECUTE FUNCTION "strata_lineages_one_way"();

-- A closed pin keeps the time it was closed (reopening it is refused by pins_guard).
CREATE FUNCTION "strata_pins_one_way"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD."released" AND NEW."released" AND NEW."released_at" IS DISTINCT FROM OLD."released_at" THEN
    RAISE EXCEPTION 'one-way state: pin % was released at % for good', OLD."pin_id", OLD."released_at"
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "pins_one_way" BEFORE UPDATE ON "pins" FOR EACH ROW EXECUTE FUNCTION "strata_pins_one_way"();

-- A stored blob never goes back to uploading, and its digest, size and chunks never change.
CREATE FUNCTION "strata_blobs_one_way"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD."state" = 'stored' AND (NEW."state" <> 'stored'
     OR NEW."digest" <> OLD."digest"
     OR NEW."size_bytes" <> OLD."size_bytes"
     OR NEW."chunk_count" <> OLD."chunk_count") THEN
    RAISE EXCEPTION 'one-way state: blob % is stored for good', OLD."digest" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "blobs_one_way" BEFORE UPDATE ON "blobs" FOR EACH ROW EXECUTE FUNCTION "strata_blobs_one_way"();

-- A restore's outcome is reported once: pending -> restored | degraded | unrestored | failed,
-- then final; a discarded restore stays discarded.
CREATE FUNCTION "strata_restores_one_way"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD."outcome" <> 'pending' AND NEW."outcome" <> OLD."outcome" THEN
    RAISE EXCEPTION 'one-way state: restore % was reported % for good', OLD."id", OLD."outcome"
      USING ERRCODE = 'check_violation';
  END IF;
  IF OLD."discarded_at" IS NOT NULL AND NEW."discarded_at" IS DISTINCT FROM OLD."discarded_at" THEN
    RAISE EXCEPTION 'one-way state: restore % was discarded for good', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "restores_one_way" BEFORE UPDATE ON "restores" FOR EACH ROW EXECUTE FUNCTION "strata_restores_one_way"();

-- A collection run ends once: running -> finished | failed, then final.
CREATE FUNCTION "strata_collection_runs_one_way"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD."status" <> 'running' AND NEW."status" <> OLD."status" THEN
    RAISE EXCEPTION 'one-way state: collection run % %, for good', OLD."id", OLD."status"
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "collection_runs_one_way" BEFORE UPDATE ON "collection_runs" FOR EACH ROW EXECUTE FUNCTION "strata_collection_runs_one_way"();
