// Which module defines each top-level command. `strata capture …` loads only the capture
// module, not the dashboard server, the job queue and the auth library the other commands
// need: it starts in half the time and with a smaller process, and every git process a
// capture starts is cheaper for it (Node forks its whole memory to start a child).
import type { Command } from "commander";

type Register = (program: Command) => void;

/** Command modules in the order `strata --help` lists them. */
const MODULES: Record<string, () => Promise<Register>> = {
  serve: async () => (await import("./serve.ts")).registerServe,
  migrate: async () => (await import("./migrate.ts")).registerMigrate,
  agent: async () => (await import("./agent.ts")).registerAgent,
  demo: async () => (await import("./demo.ts")).registerDemo,
  capture: async () => (await import("./capture.ts")).registerCapture,
  gc: async () => (await import("./gc.ts")).registerGc,
  sweep: async () => (await import("./sweep.ts")).registerSweep,
  user: async () => (await import("./user.ts")).registerUser,
  worker: async () => (await import("./worker.ts")).registerWorker,
  restore: async () => (await import("./restore.ts")).registerRestore,
};

/** Each top-level command and the module (a key of MODULES) that registers it. */
export const COMMAND_MODULES: Readonly<Record<string, keyof typeof MODULES>> = {
  serve: "serve",
  migrate: "migrate",
  agent: "agent",
  demo: "demo",
  capture: "capture",
  gc: "gc",
  sweep: "sweep",
  user: "user",
  worker: "worker",
  restore: "restore",
  acquire: "restore",
  export: "restore",
  import: "restore",
};

export const COMMAND_MODULE_NAMES = Object.keys(MODULES);

/** Registers one module's commands. */
export async function registerModule(program: Command, module: string): Promise<void> {
  const load = MODULES[module];
  if (!load) throw new Error(`no command module ${module}`);
  (await load())(program);
}

/**
 * Registers what `argv` needs: the module of the command it names, or every module when it
 * names none or one this table does not know (help, a flag, a typo: commander answers those
 * with the whole list).
 */
export async function registerCommands(program: Command, argv: readonly string[]): Promise<void> {
  const name = argv[2] ?? "";
  const module = Object.hasOwn(COMMAND_MODULES, name) ? COMMAND_MODULES[name] : undefined;
  for (const each of module ? [module] : COMMAND_MODULE_NAMES) await registerModule(program, each);
}
