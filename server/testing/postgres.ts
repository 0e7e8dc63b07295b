// Where the tests find a PostgreSQL server that lets them create databases.

export function adminPostgresUrl(): string {
  return process.env.STRATA_TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
}

export const POSTGRES_HINT =
  "PostgreSQL is not reachable for the tests. Start the local cluster with " +
  "`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, " +
  "or point STRATA_TEST_POSTGRES_URL at a server where this user may CREATE DATABASE.";
