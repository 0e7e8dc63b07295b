import { Command, CommanderError } from "commander";
import { ZodError } from "zod";
import { ConfigError } from "../server/config/config.ts";
import { StrataError } from "../server/domain/errors.ts";
import { registerCommands } from "./commands/index.ts";
import { EXIT, CliError } from "./output.ts";

const program = new Command()
  .name("strata")
  .description("Snapshot control plane for AI coding-agent workspaces")
  .showHelpAfterError()
  .exitOverride();

try {
  // Only the named command's module is loaded (see commands/index.ts).
  await registerCommands(program, process.argv);
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  } else if (error instanceof ConfigError) {
    process.stderr.write(`strata: ${error.message}\n`);
    process.exitCode = EXIT.CONFIG;
  } else if (error instanceof StrataError) {
    process.stderr.write(`strata: ${error.message} [${error.code}]\n${error.hint ? `  hint: ${error.hint}\n` : ""}`);
    process.exitCode = error.code === "INVALID_INPUT" ? EXIT.USAGE : EXIT.FAILURE;
  } else if (error instanceof ZodError) {
    process.stderr.write(
      `strata: invalid input: ${error.issues.map((i) => `${i.path.join(".") || "value"}: ${i.message}`).join("; ")}\n`,
    );
    process.exitCode = EXIT.USAGE;
  } else if (error instanceof CliError) {
    process.stderr.write(`strata: ${error.message}\n`);
    process.exitCode = error.exitCode;
  } else {
    process.stderr.write(`strata: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = EXIT.FAILURE;
  }
}
