-- The SQLite catalog opens with the distribution's sqlite3 (Debian 12: 3.40) and Python's
-- sqlite3, so operators can inspect and `.backup` it with the standard tools. A RAISE whose
-- message is an expression (20261201200000_one_way_states built it with ||) needs a much newer
-- SQLite: older ones refuse the whole schema ("malformed database schema"). The rule is the
-- same; its message is a literal (the refusal still starts "one-way state:").
-- server/db/system-sqlite.test.ts opens a migrated catalog with the system's sqlite3.
DROP TRIGGER "snapshots_one_way_state";
CREATE TRIGGER "snapshots_one_way_state" BEFORE UPDATE OF "state" ON "snapshots"
WHEN NOT (NEW."state" = OLD."state"
  OR (OLD."state" = 'capturing' AND NEW."state" IN ('ready', 'superseded', 'retired', 'failed', 'deleting', 'deleted'))
  OR (OLD."state" = 'ready' AND NEW."state" IN ('superseded', 'retired'))
  OR (OLD."state" = 'superseded' AND NEW."state" IN ('retired', 'deleting'))
  OR (OLD."state" = 'failed' AND NEW."state" IN ('retired', 'deleting'))
  OR (OLD."state" = 'retired' AND NEW."state" = 'deleting')
  OR (OLD."state" = 'deleting' AND NEW."state" = 'deleted'))
BEGIN SELECT RAISE(ABORT, 'one-way state: a snapshot''s state only moves forward (capturing, ready, superseded or failed, retired, deleting, deleted)'); END;
