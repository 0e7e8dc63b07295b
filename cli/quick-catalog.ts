// What `strata capture` needs from this machine's catalog before it knows whether there is
// anything to publish: that the catalog is migrated, who the agent is, and the lineage's head.
// An agent captures at every turn and most captures find nothing new, so these few reads go
// over the database driver (server/db/statements/capture-reads.ts): Prisma's client, its query
// compiler and the publishing code are loaded only when a capture has something to publish.
//
// The agent is decided as authenticateAgent and localAgent decide it (server/auth/agents.ts,
// connection.ts), with the same messages, and a token's use is recorded as authenticateAgent
// records it: at most once a minute.
import type { LineageKey } from "../server/domain/snapshot-keys.ts";
import { StrataError } from "../server/domain/errors.ts";
import { TOKEN_USE_RECORDED_EVERY_MS, trustAgent, type AgentScope } from "../server/domain/scope.ts";
import { hashToken } from "../server/auth/agents.ts";
import { ensureMigrated } from "../server/db/migrate.ts";
import {
  agentByName,
  checkpointHeadId,
  newestMigrationOn,
  openDriverConnection,
  recordTokenUse,
  tokenByHash,
  type DriverConnection,
} from "../server/db/statements/capture-reads.ts";
import { migrating } from "./catalog.ts";
import { CliError, EXIT } from "./output.ts";

const BAD_TOKEN = "STRATA_TOKEN is not a valid agent token for this catalog.";

export interface QuickCatalog {
  /** The agent the token proves, else the active agent named. */
  agent(token: string | undefined, name: string | undefined): Promise<AgentScope>;
  /** The ready checkpoint head of the agent's lineage, as localCatalog's lineageHeadId finds it. */
  lineageHeadId(agent: AgentScope, key: LineageKey): Promise<string | null>;
  close(): Promise<void>;
}

function quickCatalog(connection: DriverConnection): QuickCatalog {
  return {
    async agent(token, name) {
      if (token) {
        const row = token.startsWith("strata_") ? await tokenByHash(connection, hashToken(token)) : null;
        if (!row || row.revoked || row.agentDisabled) throw new StrataError("UNAUTHORIZED", BAD_TOKEN);
        const now = new Date();
        if (row.lastUsedAt === null || !(now.getTime() - row.lastUsedAt <= TOKEN_USE_RECORDED_EVERY_MS)) {
          await recordTokenUse(connection, row.tokenId, now).catch(() => undefined);
        }
        return trustAgent(row.agentId, row.agentName);
      }
      if (!name) throw new CliError("Name the agent to act as: --agent NAME, or set STRATA_TOKEN.", EXIT.USAGE);
      const row = await agentByName(connection, name);
      if (!row || row.disabled) {
        throw new StrataError("UNAUTHORIZED", `No active agent is named ${JSON.stringify(name)}.`);
      }
      return trustAgent(row.id, row.name);
    },
    lineageHeadId: (agent, key) =>
      checkpointHeadId(connection, {
        agentId: agent.agentId,
        workContextId: key.workContextId,
        backendKind: key.backendKind,
        baseImage: key.baseImage,
        repositoryIdentity: key.repository.identity,
      }),
    close: () => connection.close(),
  };
}

/** Opens the catalog at `url` over its driver and checks that it is migrated (migrating if not). */
export async function openQuickCatalog(url: string): Promise<QuickCatalog> {
  let connection: DriverConnection;
  try {
    connection = await openDriverConnection(url);
  } catch (error) {
    throw new CliError(`could not open the catalog: ${(error as Error).message}`, EXIT.DATABASE);
  }
  try {
    await migrating(url, () => ensureMigrated(url, () => newestMigrationOn(connection)));
    return quickCatalog(connection);
  } catch (error) {
    await connection.close();
    throw error;
  }
}
