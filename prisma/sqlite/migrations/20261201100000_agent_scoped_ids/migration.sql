-- Layer uuids and pin ids belong to one agent each: an agent names, reuses, releases and
-- collides only with its own, and another agent's id behaves exactly like one never used.

-- Layers. "uuid" stays the catalog's own row key (heads, parents and collection join on it);
-- "agent_uuid" is the uuid the owning agent declared, unique within that agent.
-- SQLite adds a NOT NULL column only with a default, and the table cannot be rebuilt here (the
-- migration runs in a transaction with foreign keys on, which would re-point snapshot_heads);
-- the default is never used: every row is backfilled below and the code always sets it.
ALTER TABLE "layers" ADD COLUMN "agent_id" TEXT CONSTRAINT "layers_agent_id_fkey" REFERENCES "agents" ("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "layers" ADD COLUMN "agent_uuid" TEXT NOT NULL DEFAULT '';
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

CREATE UNIQUE INDEX "layers_agent_id_agent_uuid_key" ON "layers"("agent_id", "agent_uuid");

-- A layer's identity (and owner, once it has one), parent and bytes never change.
DROP TRIGGER "layers_immutable";
CREATE TRIGGER "layers_immutable" BEFORE UPDATE ON "layers"
WHEN NEW."uuid" <> OLD."uuid" OR NEW."parent_uuid" IS NOT OLD."parent_uuid"
  OR NEW."digest" <> OLD."digest" OR NEW."kind" <> OLD."kind" OR NEW."size_bytes" <> OLD."size_bytes"
  OR NEW."agent_uuid" <> OLD."agent_uuid" OR (OLD."agent_id" IS NOT NULL AND NEW."agent_id" IS NOT OLD."agent_id")
BEGIN SELECT RAISE(ABORT, 'layer is immutable'); END;
-- Nor is a layer written without the uuid its agent declared.
CREATE TRIGGER "layers_agent_uuid_given" BEFORE INSERT ON "layers"
WHEN NEW."agent_uuid" = ''
BEGIN SELECT RAISE(ABORT, 'a layer needs its agent uuid'); END;

-- Pins. A pin id is unique within its agent: the agent whose snapshot the pin protects. The
-- table is rebuilt for its new key (nothing references pins, so this is safe with foreign keys
-- on), keeping the partial indexes of active pins and the guards of the earlier migrations.
CREATE TABLE "new_pins" (
    "agent_id" TEXT NOT NULL,
    "pin_id" TEXT NOT NULL,
    "snapshot_id" TEXT NOT NULL,
    "released" BOOLEAN NOT NULL DEFAULT false,
    "holder" TEXT,
    "purpose" TEXT,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "released_at" DATETIME,
    "expires_at" DATETIME,

    PRIMARY KEY ("agent_id", "pin_id"),
    CONSTRAINT "pins_agent_id_fkey" FOREIGN KEY ("agent_id") REFERENCES "agents" ("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    CONSTRAINT "pins_released_check" CHECK (("released" = true AND "released_at" IS NOT NULL) OR ("released" = false AND "released_at" IS NULL))
);

-- Hand-written backfill, first answer wins:
-- 1. a release that arrived first from an agent ("agent:<id>" holder, purpose
--    released-before-pin) is that agent's: under the new rule it closes an id of its own only
--    (so another agent's release no longer closes the snapshot owner's id);
-- 2. any other pin is the agent's whose snapshot it names;
-- 3. a release-first row of a snapshot that does not exist: the holder agent, else the agent
--    of the restore its id names ("restore:<restore id>").
-- Rows with no agent left name no snapshot (snapshot rows are never deleted), so they protect
-- nothing: they are not copied.
INSERT INTO "new_pins" ("agent_id", "pin_id", "snapshot_id", "released", "holder", "purpose", "created_at", "released_at", "expires_at")
SELECT "agent_id", "pin_id", "snapshot_id", "released", "holder", "purpose", "created_at", "released_at", "expires_at"
FROM (
    SELECT p.*, COALESCE(
        (SELECT a."id" FROM "agents" a WHERE p."purpose" = 'released-before-pin' AND p."holder" = 'agent:' || a."id"),
        (SELECT s."agent_id" FROM "snapshots" s WHERE s."id" = p."snapshot_id"),
        (SELECT a."id" FROM "agents" a WHERE p."holder" = 'agent:' || a."id"),
        (SELECT r."agent_id" FROM "restores" r WHERE p."pin_id" = 'restore:' || r."id")
    ) AS "agent_id"
    FROM "pins" p
) "attributed"
WHERE "agent_id" IS NOT NULL;

DROP TABLE "pins";
ALTER TABLE "new_pins" RENAME TO "pins";

-- Active pins by snapshot (retirement asks "is anything still using it?").
CREATE INDEX "pins_active_by_snapshot" ON "pins"("snapshot_id") WHERE "released" = false;
-- Active pins that carry an expiry, for the collector's release of expired pins.
CREATE INDEX "pins_active_expiry" ON "pins"("expires_at") WHERE "released" = false AND "expires_at" IS NOT NULL;

-- A closed pin stays closed, keeps its snapshot and its agent, and an active pin cannot be deleted.
CREATE TRIGGER "pins_no_reopen" BEFORE UPDATE ON "pins"
WHEN OLD."released" = 1 AND NEW."released" = 0
BEGIN SELECT RAISE(ABORT, 'pin is closed and cannot be reopened'); END;
CREATE TRIGGER "pins_no_rebind" BEFORE UPDATE ON "pins"
WHEN NEW."pin_id" <> OLD."pin_id" OR NEW."snapshot_id" <> OLD."snapshot_id" OR NEW."agent_id" <> OLD."agent_id"
BEGIN SELECT RAISE(ABORT, 'pin cannot be rebound'); END;
CREATE TRIGGER "pins_no_delete_active" BEFORE DELETE ON "pins"
WHEN OLD."released" = 0
BEGIN SELECT RAISE(ABORT, 'pin is active and cannot be deleted'); END;
