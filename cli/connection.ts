// Who the CLI acts as, and against which catalog: a Strata server (--server or
// STRATA_SERVER_URL, with the agent token in STRATA_TOKEN), or this machine's database as the
// agent STRATA_TOKEN proves or --agent names. One place for capture, restore, export and import.
import { loadClientConfig, serverUrlSchema } from "../server/config/config.ts";
import type { Db } from "../server/db/client.ts";
import { StrataError } from "../server/domain/errors.ts";
import { trustAgent, type AgentScope } from "../server/domain/scope.ts";
import { authenticateAgent } from "../server/auth/agents.ts";
import { CliError, EXIT } from "./output.ts";
import type { ServerOptions } from "../client/connection.ts";

/** The server to talk to (the flag wins over STRATA_SERVER_URL), or null for this machine's catalog. */
export function serverTarget(flag: string | undefined): ServerOptions | null {
  const config = loadClientConfig();
  let url = config.serverUrl;
  if (flag !== undefined) {
    const parsed = serverUrlSchema.safeParse(flag);
    if (!parsed.success) throw new CliError(`--server ${parsed.error.issues[0]?.message ?? "is invalid"}`, EXIT.USAGE);
    url = parsed.data;
  }
  if (!url) return null;
  if (!config.token) throw new CliError("Set STRATA_TOKEN to an agent token to talk to a server.", EXIT.USAGE);
  return { url, token: config.token };
}

/** With this machine's catalog: the agent STRATA_TOKEN proves, else the active agent --agent names. */
export async function localAgent(db: Db, name: string | undefined): Promise<AgentScope> {
  const { token } = loadClientConfig();
  if (token) {
    const agent = await authenticateAgent(db, `Bearer ${token}`);
    if (!agent) throw new StrataError("UNAUTHORIZED", "STRATA_TOKEN is not a valid agent token for this catalog.");
    return agent;
  }
  if (!name) throw new CliError("Name the agent to act as: --agent NAME, or set STRATA_TOKEN.", EXIT.USAGE);
  const row = await db.agent.findUnique({ where: { name }, select: { id: true, name: true, disabledAt: true } });
  if (!row || row.disabledAt)
    throw new StrataError("UNAUTHORIZED", `No active agent is named ${JSON.stringify(name)}.`);
  // Whoever can open the catalog's database may act as any of its agents.
  return trustAgent(row.id, row.name);
}
