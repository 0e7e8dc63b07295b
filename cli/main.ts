// The `strata` command. This module and the command table load nothing else: `strata --help`
// and `strata --version` answer from them alone, and a command loads its own modules (see
// commands/index.ts). Errors are told apart by name, so neither zod nor the configuration's
// module is loaded to recognize theirs.
import { Command, CommanderError } from "commander";
import pkg from "../package.json" with { type: "json" };
import { StrataError } from "../server/domain/errors.ts";
import { markStart } from "../server/log/start-phases.ts";
import { registerCommands } from "./commands/index.ts";
import { EXIT, CliError } from "./output.ts";

interface Issues {
  issues: { path: PropertyKey[]; message: string }[];
}

function named<T>(error: unknown, name: string): error is Error & T {
  return error instanceof Error && error.name === name;
}

const program = new Command()
  .name("strata")
  .description("Snapshot control plane for AI coding-agent workspaces")
  .version(pkg.version, "-V, --version", "print the version of strata")
  .showHelpAfterError()
  .exitOverride();

markStart("cli-loaded");
try {
  await registerCommands(program, process.argv);
  markStart("command-loaded");
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  } else if (named(error, "ConfigError")) {
    // server/config/config.ts: a variable with a bad value, named in the message.
    process.stderr.write(`strata: ${error.message}\n`);
    process.exitCode = EXIT.CONFIG;
  } else if (error instanceof StrataError) {
    process.stderr.write(`strata: ${error.message} [${error.code}]\n${error.hint ? `  hint: ${error.hint}\n` : ""}`);
    process.exitCode = error.code === "INVALID_INPUT" ? EXIT.USAGE : EXIT.FAILURE;
  } else if (named<Issues>(error, "ZodError") && Array.isArray(error.issues)) {
    process.stderr.write(
      `strata: invalid input: ${error.issues.map((i) => `${i.path.map(String).join(".") || "value"}: ${i.message}`).join("; ")}\n`,
    );
    process.exitCode = EXIT.USAGE;
  } else if (error instanceof CliError) {
    process.stderr.write(`strata: ${error.message}\n`);
    process.exitCode = error.exitCode;
  } else {
    const stack = (error as Error).stack;
    const { sourceMappedStack } = await import("./source-mapped-stack.ts");
    process.stderr.write(`strata: ${stack ? sourceMappedStack(stack) : String(error)}\n`);
    process.exitCode = EXIT.FAILURE;
  }
}
