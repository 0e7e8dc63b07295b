// The command table main.ts loads from: a command the table does not name, or names under
// another module, would be "unknown" when run on its own.
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { COMMAND_MODULES, COMMAND_MODULE_NAMES, registerCommands, registerModule } from "./index.ts";

const names = (program: Command) => program.commands.map((c) => c.name());

describe("the command table", () => {
  it("names every command of every module, under the module that registers it", async () => {
    const registered: Record<string, string> = {};
    for (const module of COMMAND_MODULE_NAMES) {
      const program = new Command();
      await registerModule(program, module);
      expect(names(program).length).toBeGreaterThan(0);
      for (const name of names(program)) registered[name] = module;
    }
    expect(registered).toEqual(COMMAND_MODULES);
  });

  it("registers only the named command's module, and every module otherwise", async () => {
    const only = new Command();
    await registerCommands(only, ["node", "strata", "export", "--help"]);
    expect(names(only).sort()).toEqual(["acquire", "export", "import", "restore"]);

    for (const argv of [[], ["--help"], ["help"], ["nosuch"], ["__proto__"], ["toString"]]) {
      const all = new Command();
      await registerCommands(all, ["node", "strata", ...argv]);
      expect(names(all).sort()).toEqual(Object.keys(COMMAND_MODULES).sort());
    }
  });
});
