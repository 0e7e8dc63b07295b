-- The SQLite catalog's one-way snapshot trigger gets a literal RAISE message in this migration,
-- so that Debian 12's sqlite3 (3.40) and Python's sqlite3 open the embedded catalog
-- (prisma/sqlite/migrations/20261208010000_portable_triggers). PostgreSQL's rule is a plpgsql
-- function, which formats its message at run time: nothing changes here. Both providers keep
-- the same list of migrations.
SELECT 1;
