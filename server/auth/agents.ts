// Agents and their API tokens. A token is shown once, at creation; only its SHA-256 is stored.
import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { Db } from "../db/client.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { StrataError } from "../domain/errors.ts";
import { TOKEN_USE_RECORDED_EVERY_MS, trustAgent, type AgentScope } from "../domain/scope.ts";
import { noteRequestIdentity } from "../log/request-context.ts";

const TOKEN_PREFIX = "strata_";

const agentNameSchema = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "use letters, digits, '.', '_' and '-'");

export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

function newToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString("base64url");
}

export interface IssuedToken {
  agentId: string;
  agentName: string;
  tokenId: string;
  /** The secret. Shown once; never stored. */
  token: string;
  prefix: string;
}

async function issueToken(db: Db, agentId: string, agentName: string, label?: string): Promise<IssuedToken> {
  const token = newToken();
  const prefix = token.slice(0, TOKEN_PREFIX.length + 6);
  const row = await db.agentToken.create({
    data: { agentId, tokenHash: hashToken(token), prefix, label: label ?? null },
  });
  return { agentId, agentName, tokenId: row.id, token, prefix };
}

/** Creates an agent and its first token. */
export async function createAgent(db: Db, opts: { name: string }): Promise<IssuedToken> {
  const name = agentNameSchema.parse(opts.name);
  try {
    const agent = await db.agent.create({ data: { name } });
    return await issueToken(db, agent.id, agent.name);
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new StrataError("CONFLICT", `An agent named ${name} already exists.`, {
        hint: "Choose another name, or issue a new token for the existing agent.",
      });
    }
    throw error;
  }
}

/** Issues another token for an existing agent (e.g. to rotate). */
export async function createAgentToken(db: Db, opts: { name: string; label?: string }): Promise<IssuedToken> {
  const agent = await db.agent.findUnique({ where: { name: opts.name } });
  if (!agent) throw new StrataError("NOT_FOUND", `No agent is named ${opts.name}.`);
  return issueToken(db, agent.id, agent.name, opts.label);
}

/** Revokes tokens: one by its prefix, or every token of the agent. Returns how many. */
export async function revokeAgentTokens(db: Db, opts: { name: string; prefix?: string }): Promise<number> {
  const agent = await db.agent.findUnique({ where: { name: opts.name } });
  if (!agent) throw new StrataError("NOT_FOUND", `No agent is named ${opts.name}.`);
  const result = await db.agentToken.updateMany({
    where: { agentId: agent.id, revokedAt: null, ...(opts.prefix ? { prefix: opts.prefix } : {}) },
    data: { revokedAt: new Date() },
  });
  forgetVerifiedTokens(db);
  return result.count;
}

export async function listAgents(db: Db) {
  return db.agent.findMany({
    orderBy: { name: "asc" },
    select: {
      id: true,
      name: true,
      createdAt: true,
      tokens: { select: { prefix: true, createdAt: true, lastUsedAt: true, revokedAt: true } },
    },
  });
}

// Tokens proven valid in the last VERIFIED_TOKEN_TTL_MS, per catalog client, by token hash. An
// agent calls at every turn and each call looked its token up again: a Prisma query (compiled
// per call) and a round trip before any work. Safe because only successes are kept, briefly:
// a revocation through this process (revokeAgentTokens) empties the cache at once, and one made
// elsewhere (another server, a disabled agent) takes effect within the TTL — as if it had
// committed just after the requests already in flight. Keyed by client, so a token is never
// taken for valid in a catalog that did not verify it.
export const VERIFIED_TOKEN_TTL_MS = 2_000;
/**
 * A token in use is looked up again this long before its verification lapses, in the background:
 * an agent calling steadily never waits on the lookup, which would otherwise make one request in
 * every TTL window a slow one. The window itself does not move: a refresh extends it from the
 * moment the refresh started, and only when the token is still valid.
 */
const REFRESH_AHEAD_MS = 1_000;
const VERIFIED_TOKENS_MAX = 10_000;
interface Verified {
  agent: AgentScope;
  until: number;
  refreshing: boolean;
}
const verifiedTokens = new WeakMap<object, Map<string, Verified>>();

/** Empties the verified-token cache of a catalog client (its tokens changed). */
function forgetVerifiedTokens(db: Db): void {
  verifiedTokens.delete(db);
}

/** The agent a token hash proves now, from the catalog (records its use at most once a minute). */
async function lookUpToken(db: Db, tokenHash: string): Promise<AgentScope | null> {
  const row = await db.agentToken.findUnique({
    where: { tokenHash },
    select: {
      id: true,
      revokedAt: true,
      lastUsedAt: true,
      agent: { select: { id: true, name: true, disabledAt: true } },
    },
  });
  if (!row || row.revokedAt || row.agent.disabledAt) return null;
  // Touch lastUsedAt at most once a minute, so authentication stays a read.
  if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > TOKEN_USE_RECORDED_EVERY_MS) {
    await db.agentToken.update({ where: { id: row.id }, data: { lastUsedAt: new Date() } }).catch(() => undefined);
  }
  return trustAgent(row.agent.id, row.agent.name);
}

/** Looks a cached token up again off the request path; drops it when it no longer proves anything. */
function refreshAhead(db: Db, tokenHash: string, entry: Verified): void {
  entry.refreshing = true;
  const started = Date.now();
  lookUpToken(db, tokenHash)
    .then((agent) => {
      // Forgotten meanwhile (its tokens changed in this process): stays forgotten.
      if (verifiedTokens.get(db)?.get(tokenHash) !== entry) return;
      if (agent) entry.until = started + VERIFIED_TOKEN_TTL_MS;
      else verifiedTokens.get(db)?.delete(tokenHash);
    })
    .catch(() => undefined)
    .finally(() => {
      entry.refreshing = false;
    });
}

/**
 * Resolves an `Authorization: Bearer …` header to an agent, or null when it proves nothing; the
 * agent is noted on the request being answered (its log line names it).
 */
export async function authenticateAgent(db: Db, authorization: string | null): Promise<AgentScope | null> {
  const agent = await agentOfToken(db, authorization);
  if (agent) noteRequestIdentity({ agentId: agent.agentId, agentName: agent.agentName });
  return agent;
}

async function agentOfToken(db: Db, authorization: string | null): Promise<AgentScope | null> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  const token = match?.[1];
  if (!token || !token.startsWith(TOKEN_PREFIX)) return null;
  const tokenHash = hashToken(token);
  let verified = verifiedTokens.get(db);
  const cached = verified?.get(tokenHash);
  const now = Date.now();
  if (cached && cached.until > now) {
    if (cached.until - now < REFRESH_AHEAD_MS && !cached.refreshing) refreshAhead(db, tokenHash, cached);
    return cached.agent;
  }
  const agent = await lookUpToken(db, tokenHash);
  if (!agent) {
    verified?.delete(tokenHash);
    return null;
  }
  if (!verified) verifiedTokens.set(db, (verified = new Map()));
  if (verified.size >= VERIFIED_TOKENS_MAX) verified.clear();
  verified.set(tokenHash, { agent, until: Date.now() + VERIFIED_TOKEN_TTL_MS, refreshing: false });
  return agent;
}
