// Fails the whole test run at once, with the way to fix it, when PostgreSQL is not reachable.
import pg from "pg";
import { parseIntoClientConfig } from "pg-connection-string";
import { adminPostgresUrl, POSTGRES_HINT } from "./postgres.ts";

export default async function setup(): Promise<void> {
  const client = new pg.Client({
    ...(parseIntoClientConfig(adminPostgresUrl()) as pg.ClientConfig),
    connectionTimeoutMillis: 5_000,
  });
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (error) {
    throw new Error(`${POSTGRES_HINT}\n  cause: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
