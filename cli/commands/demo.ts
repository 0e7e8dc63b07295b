import type { Command } from "commander";
import { withCatalog } from "../catalog.ts";
import { emit, progressDone } from "../output.ts";

export function registerDemo(program: Command): void {
  program
    .command("demo")
    .description("fill an empty catalog with a realistic history made by real captures and restores")
    .option("--json", "print the summary as JSON")
    .action(async (opts: { json?: boolean }) => {
      const [{ loadConfig }, { demoDirectory, runDemo }] = await Promise.all([
        import("../../server/config/config.ts"),
        import("../demo.ts"),
      ]);
      const config = loadConfig();
      const summary = await withCatalog((db) =>
        runDemo({
          db,
          workDir: demoDirectory(config.dataDir),
          host: config.host,
          log: (line) => progressDone(line),
        }),
      );
      emit(
        Boolean(opts.json),
        summary,
        [
          `Demo catalog ready: ${summary.snapshots} snapshots, ${summary.restores} restores, ${summary.activePins} active pins`,
          `across ${summary.repositories.length} repositories and agents ${summary.agents.join(", ")}.`,
          summary.user
            ? `Sign in at ${config.publicUrl} as ${summary.user.email} with this password (shown once):\n\n  ${summary.user.password}\n`
            : `Sign in at ${config.publicUrl} with an existing user.`,
          `The demo's repositories and worktrees are in ${summary.workDir}.`,
        ].join("\n"),
      );
    });
}
