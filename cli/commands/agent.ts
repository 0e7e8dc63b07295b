import type { Command } from "commander";
import { withCatalog } from "../catalog.ts";
import { emit } from "../output.ts";

const agents = () => import("../../server/auth/agents.ts");

export function registerAgent(program: Command): void {
  const agent = program.command("agent").description("manage agents and their API tokens");

  agent
    .command("create")
    .argument("<name>", "the agent's name (letters, digits, . _ -)")
    .description("create an agent and print its token (shown once)")
    .option("--json", "print the result as JSON")
    .action(async (name: string, opts: { json?: boolean }) => {
      const { createAgent } = await agents();
      const issued = await withCatalog((db) => createAgent(db, { name }));
      emit(
        Boolean(opts.json),
        issued,
        `Created agent ${issued.agentName}. Its token, shown only now:\n\n  ${issued.token}\n\n` +
          `Agents send it as: Authorization: Bearer <token>`,
      );
    });

  agent
    .command("token")
    .argument("<name>", "an existing agent")
    .description("issue another token for an agent (to rotate); printed once")
    .option("--label <label>", "a note to tell tokens apart")
    .option("--json", "print the result as JSON")
    .action(async (name: string, opts: { json?: boolean; label?: string }) => {
      const { createAgentToken } = await agents();
      const issued = await withCatalog((db) => createAgentToken(db, { name, label: opts.label }));
      emit(Boolean(opts.json), issued, `New token for ${issued.agentName}, shown only now:\n\n  ${issued.token}\n`);
    });

  agent
    .command("revoke")
    .argument("<name>", "the agent")
    .option("--prefix <prefix>", "revoke only the token starting with this prefix")
    .option("--json", "print the result as JSON")
    .description("revoke an agent's tokens (all, or one by prefix)")
    .action(async (name: string, opts: { json?: boolean; prefix?: string }) => {
      const { revokeAgentTokens } = await agents();
      const revoked = await withCatalog((db) => revokeAgentTokens(db, { name, prefix: opts.prefix }));
      emit(Boolean(opts.json), { agentName: name, revoked }, `Revoked ${revoked} token(s) of ${name}.`);
    });

  agent
    .command("list")
    .option("--json", "print the result as JSON")
    .description("list agents and their tokens (prefixes only)")
    .action(async (opts: { json?: boolean }) => {
      const { listAgents } = await agents();
      const listed = await withCatalog((db) => listAgents(db));
      const lines = listed.map(
        (a) =>
          `${a.name}  tokens: ${a.tokens.map((t) => `${t.prefix}…${t.revokedAt ? " (revoked)" : ""}`).join(", ") || "none"}`,
      );
      emit(Boolean(opts.json), listed, lines.join("\n") || "No agents yet: strata agent create NAME");
    });
}
