// strata mcp --root DIR …: Strata as a Model Context Protocol server on stdio, for agent
// harnesses (client/mcp.ts has the tools). It talks to a Strata server (--server or
// STRATA_SERVER_URL) as the agent whose token is in STRATA_TOKEN. stdout carries the protocol
// and nothing else; the log goes to stderr.
import type { Command } from "commander";
import pkg from "../../package.json" with { type: "json" };
import { CliError, EXIT } from "../output.ts";

interface McpFlags {
  root: string[];
  server?: string;
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerMcp(program: Command): void {
  program
    .command("mcp")
    .description("serve Strata's tools to an agent harness over the Model Context Protocol (stdio)")
    .option("--root <dir>", "a directory the tools may read and write under (repeatable; at least one)", collect, [])
    .option("--server <url>", "the Strata server (default $STRATA_SERVER_URL; the token is read from $STRATA_TOKEN)")
    .action(async (flags: McpFlags) => {
      if (flags.root.length === 0)
        throw new CliError("Give the directories the tools may use: --root DIR (repeatable).", EXIT.USAGE);
      const [
        { serverTarget },
        { createStrataClient },
        { createStrataMcpServer },
        { StdioServerTransport },
        { existsSync },
      ] = await Promise.all([
        import("../connection.ts"),
        import("../../client/index.ts"),
        import("../../client/mcp.ts"),
        import("@modelcontextprotocol/sdk/server/stdio.js"),
        import("node:fs"),
      ]);
      for (const root of flags.root) {
        if (!existsSync(root)) throw new CliError(`--root ${root} does not exist.`, EXIT.USAGE);
      }
      const server = serverTarget(flags.server);
      if (!server) {
        throw new CliError(
          "Name the Strata server: --server URL or STRATA_SERVER_URL (with STRATA_TOKEN).",
          EXIT.USAGE,
        );
      }
      const mcp = createStrataMcpServer(createStrataClient(server), { roots: flags.root, version: pkg.version });
      await mcp.connect(new StdioServerTransport());
      process.stderr.write(`strata mcp: serving ${server.url} for ${flags.root.join(", ")} on stdio\n`);
      // Runs until the harness closes stdin.
      await new Promise<void>((resolve) => process.stdin.once("close", resolve));
      await mcp.close();
    });
}
