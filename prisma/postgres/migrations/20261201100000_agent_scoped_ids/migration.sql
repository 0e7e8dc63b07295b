-- Layer uuids and pin ids belong to one agent each: an agent names, reuses, releases and
-- collides only with its own, and another agent's id behaves exactly like one never used.

-- Layers. "uuid" stays the catalog's own row key (heads, parents and collection join on it);
-- "agent_uuid" is the uuid the owning agent declared, unique within that agent.
ALTER TABLE "layers" ADD COLUMN "agent_id" TEXT, ADD COLUMN "agent_uuid" TEXT;
UPDATE "layers" SET "agent_uuid" = "uuid";

-- Hand-written backfill: a layer belongs to the agent of the snapshots whose heads reach it.
-- Until now an agent could name another agent's layer as a head or a parent, so a layer may be
-- reached from several agents' snapshots: it goes to the agent of the earliest such snapshot.
-- The other agent's snapshot keeps its head row (the same catalog row), so that snapshot's
-- content stays protected and restorable, and its export still names the same uuid; but that
-- agent can no longer name the uuid in a new publish (for it, the uuid is unknown, as any
-- other agent's is; declaring it with its bytes makes a layer of its own). Layers no snapshot
-- reaches keep no agent: nobody can name them, and only collection sees them.
WITH RECURSIVE "reached" ("uuid", "agent_id", "created_at", "snapshot_id") AS (
    SELECT h."layer_uuid", s."agent_id", s."created_at", s."id"
    FROM "snapshot_heads" h JOIN "snapshots" s ON s."id" = h."snapshot_id"
    UNION
    SELECT l."parent_uuid", r."agent_id", r."created_at", r."snapshot_id"
    FROM "reached" r JOIN "layers" l ON l."uuid" = r."uuid" WHERE l."parent_uuid" IS NOT NULL
), "owner" ("uuid", "agent_id") AS (
    SELECT "uuid", "agent_id" FROM (
        SELECT "uuid", "agent_id",
            ROW_NUMBER() OVER (PARTITION BY "uuid" ORDER BY "created_at", "snapshot_id") AS "n"
        FROM "reached"
    ) "ranked" WHERE "n" = 1
)
UPDATE "layers" SET "agent_id" = o."agent_id" FROM "owner" o WHERE o."uuid" = "layers"."uuid";

ALTER TABLE "layers" ALTER COLUMN "agent_uuid" SET NOT NULL;
CREATE UNIQUE INDEX "layers_agent_id_agent_uuid_key" ON "layers"("agent_id", "agent_uuid");
ALTER TABLE "layers" ADD CONSTRAINT "layers_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- A layer's identity (and owner, once it has one), parent and bytes never change; its state
-- only moves forward.
CREATE OR REPLACE FUNCTION "strata_layers_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."uuid" <> OLD."uuid" OR NEW."parent_uuid" IS DISTINCT FROM OLD."parent_uuid"
     OR NEW."digest" <> OLD."digest" OR NEW."kind" <> OLD."kind" OR NEW."size_bytes" <> OLD."size_bytes"
     OR NEW."agent_uuid" <> OLD."agent_uuid"
     OR (OLD."agent_id" IS NOT NULL AND NEW."agent_id" IS DISTINCT FROM OLD."agent_id") THEN
    RAISE EXCEPTION 'layer % is immutable', OLD."uuid" USING ERRCODE = 'check_violation';
  END IF;
  IF NOT (NEW."state" = OLD."state"
          OR (OLD."state" = 'available' AND NEW."state" = 'deleting')
          OR (OLD."state" = 'deleting' AND NEW."state" = 'deleted')) THEN
    RAISE EXCEPTION 'layer % cannot go from % to %', OLD."uuid", OLD."state", NEW."state" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

-- Pins. A pin id is unique within its agent: the agent whose snapshot the pin protects.
ALTER TABLE "pins" ADD COLUMN "agent_id" TEXT;

-- Hand-written backfill, first answer wins:
-- 1. a release that arrived first from an agent ("agent:<id>" holder, purpose
--    released-before-pin) is that agent's: under the new rule it closes an id of its own only
--    (so another agent's release no longer closes the snapshot owner's id);
-- 2. any other pin is the agent's whose snapshot it names;
-- 3. a release-first row of a snapshot that does not exist: the holder agent, else the agent
--    of the restore its id names ("restore:<restore id>").
UPDATE "pins" SET "agent_id" = a."id" FROM "agents" a
WHERE "pins"."purpose" = 'released-before-pin' AND "pins"."holder" = 'agent:' || a."id";
UPDATE "pins" SET "agent_id" = s."agent_id" FROM "snapshots" s
WHERE "pins"."agent_id" IS NULL AND s."id" = "pins"."snapshot_id";
UPDATE "pins" SET "agent_id" = a."id" FROM "agents" a
WHERE "pins"."agent_id" IS NULL AND "pins"."holder" = 'agent:' || a."id";
UPDATE "pins" SET "agent_id" = r."agent_id" FROM "restores" r
WHERE "pins"."agent_id" IS NULL AND "pins"."pin_id" = 'restore:' || r."id";
-- Rows with no agent left name no snapshot (snapshot rows are never deleted), so they protect
-- nothing: they are dropped (closed first, since an open pin may not be deleted).
UPDATE "pins" SET "released" = true, "released_at" = CURRENT_TIMESTAMP WHERE "agent_id" IS NULL AND NOT "released";
DELETE FROM "pins" WHERE "agent_id" IS NULL;

ALTER TABLE "pins" ALTER COLUMN "agent_id" SET NOT NULL;
ALTER TABLE "pins" DROP CONSTRAINT "pins_pkey";
ALTER TABLE "pins" ADD CONSTRAINT "pins_pkey" PRIMARY KEY ("agent_id", "pin_id");
ALTER TABLE "pins" ADD CONSTRAINT "pins_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- A closed pin stays closed, keeps its snapshot and its agent, and an active pin cannot be deleted.
CREATE OR REPLACE FUNCTION "strata_pins_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF NOT OLD."released" THEN
      RAISE EXCEPTION 'pin % is active and cannot be deleted', OLD."pin_id" USING ERRCODE = 'check_violation';
    END IF;
    RETURN OLD;
  END IF;
  IF OLD."released" AND NOT NEW."released" THEN
    RAISE EXCEPTION 'pin % is closed and cannot be reopened', OLD."pin_id" USING ERRCODE = 'check_violation';
  END IF;
  IF NEW."pin_id" <> OLD."pin_id" OR NEW."snapshot_id" <> OLD."snapshot_id" OR NEW."agent_id" <> OLD."agent_id" THEN
    RAISE EXCEPTION 'pin % cannot be rebound', OLD."pin_id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
