// The command table main.ts loads from: a command the table does not name, or names under
// another module, would be "unknown" when run on its own, and `strata --help` (which lists the
// table, loading no module) would describe it wrongly.
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { COMMANDS, COMMAND_MODULE_NAMES, registerCommands, registerModule } from "./index.ts";

const names = (program: Command) => program.commands.map((c) => c.name());

describe("the command table", () => {
  it("names every command of every module, under the module that registers it, as its help shows it", async () => {
    const registered: Record<string, { module: string; term: string; description: string }> = {};
    for (const module of COMMAND_MODULE_NAMES) {
      const program = new Command();
      await registerModule(program, module);
      expect(names(program).length).toBeGreaterThan(0);
      const help = program.createHelp();
      for (const command of program.commands) {
        registered[command.name()] = {
          module,
          term: help.subcommandTerm(command),
          description: help.subcommandDescription(command),
        };
      }
    }
    expect(registered).toEqual(COMMANDS);
  });

  it("registers only the named command's module (also after help), and summaries otherwise", async () => {
    for (const argv of [
      ["export", "--help"],
      ["help", "import"],
    ]) {
      const only = new Command();
      await registerCommands(only, ["node", "strata", ...argv]);
      expect(names(only).sort()).toEqual(["acquire", "export", "import", "restore"]);
      // The real commands, with their options.
      expect(only.commands.find((c) => c.name() === "export")?.options.length).toBeGreaterThan(0);
    }

    for (const argv of [[], ["--help"], ["--version"], ["help"], ["nosuch"], ["__proto__"], ["toString"]]) {
      const all = new Command();
      await registerCommands(all, ["node", "strata", ...argv]);
      expect(names(all).sort()).toEqual(Object.keys(COMMANDS).sort());
      const help = all.createHelp();
      for (const command of all.commands) {
        expect(help.subcommandTerm(command)).toBe(COMMANDS[command.name()]?.term);
        expect(command.options).toEqual([]);
      }
    }
  });
});
