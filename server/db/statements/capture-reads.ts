// The reads `strata capture` makes of this machine's catalog before it knows whether it has
// anything to publish (cli/quick-catalog.ts): the newest applied migration, an agent token or an
// agent by name, and a lineage's ready checkpoint head; and the one write authentication makes,
// recording a token's use (at most once a minute). They run on a plain driver connection
// (better-sqlite3, or one pg client), not on Prisma's client: a capture that finds nothing new
// (most of them; an agent captures at every turn) never loads Prisma and its query compiler.
//
// They are the reads authenticateAgent, localAgent and localCatalog's lineageHeadId make through
// Prisma (server/auth/agents.ts, cli/connection.ts, server/capture/capture-publish.ts), on the
// same columns, and a timestamp is written as Prisma writes it (UTC; ISO text on SQLite);
// cli/commands/capture.test.ts runs capture both ways on both databases.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { ClientConfig } from "pg";
import type { DatabaseKind } from "../dialect.ts";
import { NEWEST_APPLIED_MIGRATION } from "../health.ts";
import { sqlitePath } from "../dialect.ts";

type Row = Record<string, unknown>;

/** One connection to the catalog over its driver. */
export interface DriverConnection {
  kind: DatabaseKind;
  /** The rows of a statement whose parameters are written `?`, in order. */
  rows(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

async function openSqlite(url: string): Promise<DriverConnection> {
  const { default: Database } = await import("better-sqlite3");
  const file = sqlitePath(url);
  if (file !== ":memory:") mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const db = new Database(file, { timeout: 15_000 });
  return {
    kind: "sqlite",
    async rows(sql, params = []) {
      const statement = db.prepare(sql);
      if (statement.reader) return statement.all(...params) as Row[];
      statement.run(...params);
      return [];
    },
    close: async () => void db.close(),
  };
}

async function openPostgres(url: string): Promise<DriverConnection> {
  const [{ default: pg }, { parseIntoClientConfig }] = await Promise.all([
    import("pg"),
    import("pg-connection-string"),
  ]);
  const client = new pg.Client(parseIntoClientConfig(url) as ClientConfig);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return {
    kind: "postgres",
    async rows(sql, params = []) {
      let n = 0;
      return (
        await client.query(
          sql.replace(/\?/g, () => `$${++n}`),
          [...params],
        )
      ).rows as Row[];
    },
    close: () => client.end(),
  };
}

/** Opens the catalog at `url` (file: or postgresql://) over its driver, loading only that driver. */
export function openDriverConnection(url: string): Promise<DriverConnection> {
  return url.startsWith("file:") ? openSqlite(url) : openPostgres(url);
}

/** The newest migration applied, or null; fails when the catalog has no migration history. */
export async function newestMigrationOn(connection: DriverConnection): Promise<string | null> {
  const [row] = await connection.rows(NEWEST_APPLIED_MIGRATION);
  return typeof row?.name === "string" ? row.name : null;
}

/** A timestamp column as the driver returns it (text on SQLite, a Date on PostgreSQL), in ms. */
function time(value: unknown): number | null {
  return value === null || value === undefined ? null : new Date(value as string | number | Date).getTime();
}

export interface TokenRow {
  tokenId: string;
  agentId: string;
  agentName: string;
  revoked: boolean;
  agentDisabled: boolean;
  /** When the token's use was last recorded (ms), or null. */
  lastUsedAt: number | null;
}

/** The agent token with this sha256, and its agent; null when there is none. */
export async function tokenByHash(connection: DriverConnection, tokenHash: string): Promise<TokenRow | null> {
  const [row] = await connection.rows(
    `SELECT t.id AS token_id, t.revoked_at, t.last_used_at, a.id, a.name, a.disabled_at
       FROM agent_tokens t JOIN agents a ON a.id = t.agent_id WHERE t.token_hash = ?`,
    [tokenHash],
  );
  if (!row) return null;
  return {
    tokenId: String(row.token_id),
    agentId: String(row.id),
    agentName: String(row.name),
    revoked: row.revoked_at !== null,
    agentDisabled: row.disabled_at !== null,
    lastUsedAt: time(row.last_used_at),
  };
}

/** Records a token's use at `when`, as authenticateAgent's update of `lastUsedAt` does. */
export async function recordTokenUse(connection: DriverConnection, tokenId: string, when: Date): Promise<void> {
  const iso = when.toISOString();
  if (connection.kind === "sqlite") {
    await connection.rows("UPDATE agent_tokens SET last_used_at = ? WHERE id = ?", [
      iso.replace("Z", "+00:00"),
      tokenId,
    ]);
  } else {
    await connection.rows(
      "UPDATE agent_tokens SET last_used_at = CAST(? AS timestamptz) AT TIME ZONE 'UTC' WHERE id = ?",
      [iso, tokenId],
    );
  }
}

/** The agent with this name, and whether it is disabled; null when there is none. */
export async function agentByName(
  connection: DriverConnection,
  name: string,
): Promise<{ id: string; name: string; disabled: boolean } | null> {
  const [row] = await connection.rows("SELECT id, name, disabled_at FROM agents WHERE name = ?", [name]);
  return row ? { id: String(row.id), name: String(row.name), disabled: row.disabled_at !== null } : null;
}

/** The ready checkpoint head of an agent's lineage, by its key; null when it has none. */
export async function checkpointHeadId(
  connection: DriverConnection,
  key: { agentId: string; workContextId: string; backendKind: string; baseImage: string; repositoryIdentity: string },
): Promise<string | null> {
  const [row] = await connection.rows(
    `SELECT s.id FROM snapshots s JOIN repositories r ON r.id = s.repository_id
      WHERE s.agent_id = ? AND s.class = 'checkpoint' AND s.state = 'ready' AND s.work_context_id = ?
        AND s.backend_kind = ? AND s.base_image = ? AND r.identity = ?
      LIMIT 1`,
    [key.agentId, key.workContextId, key.backendKind, key.baseImage, key.repositoryIdentity],
  );
  return row ? String(row.id) : null;
}
