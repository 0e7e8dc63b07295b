// Which module defines each top-level command, and what `strata --help` says of it. A command
// loads only its own module, and a module loads what its commands run only when one runs: `strata
// capture` never loads the dashboard server, the job queue or the auth library, and `strata
// --help` (which lists every command from the table below) loads no command module at all.
import { Command, Help } from "commander";

type Register = (program: Command) => void;

/** Command modules in the order `strata --help` lists their commands. */
const MODULES = {
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
  verify: async () => (await import("./verify.ts")).registerVerify,
  diff: async () => (await import("./diff.ts")).registerDiff,
  resume: async () => (await import("./resume.ts")).registerResume,
  hold: async () => (await import("./hold.ts")).registerHold,
  pool: async () => (await import("./pool.ts")).registerPool,
  mcp: async () => (await import("./mcp.ts")).registerMcp,
} satisfies Record<string, () => Promise<Register>>;

type ModuleName = keyof typeof MODULES;

export interface TopCommand {
  /** The module that registers it. */
  module: ModuleName;
  /** How `strata --help` shows it: its name, `[options]`, its arguments. */
  term: string;
  description: string;
}

/**
 * Each top-level command as its module registers it (index.test.ts holds the two together), so
 * the list of commands needs none of the modules.
 */
export const COMMANDS: Readonly<Record<string, TopCommand>> = {
  serve: {
    module: "serve",
    term: "serve [options]",
    description: "migrate the catalog, then serve the dashboard and the API",
  },
  migrate: {
    module: "migrate",
    term: "migrate [options]",
    description: "apply pending catalog migrations to DATABASE_URL (default: the embedded SQLite file)",
  },
  agent: { module: "agent", term: "agent", description: "manage agents and their API tokens" },
  demo: {
    module: "demo",
    term: "demo [options]",
    description: "fill an empty catalog with a realistic history made by real captures and restores",
  },
  capture: {
    module: "capture",
    term: "capture [options] [dir]",
    description: "capture a git checkout and publish it: a checkpoint of a work context, or a baseline",
  },
  gc: { module: "gc", term: "gc", description: "garbage collection of layers and blobs" },
  sweep: {
    module: "sweep",
    term: "sweep [options]",
    description: "retire stale checkpoint heads and hand expired snapshots to garbage collection",
  },
  user: { module: "user", term: "user", description: "manage dashboard users (operator, support, admin)" },
  worker: {
    module: "worker",
    term: "worker [options]",
    description: "run capture and restore jobs addressed to this host, and the sweeper and collection on a schedule",
  },
  restore: {
    module: "restore",
    term: "restore [options] <snapshot>",
    description: "restore a snapshot into a new or empty directory, verified to its recorded tree",
  },
  acquire: {
    module: "restore",
    term: "acquire [options]",
    description: "decide where a workspace starts (its checkpoint, the baseline, or cold) and restore it, in one step",
  },
  export: {
    module: "restore",
    term: "export [options] <snapshot>",
    description: "write a snapshot with its blobs inline to a .strata file (stdout by default)",
  },
  import: {
    module: "restore",
    term: "import [options] <file>",
    description: "check every blob of an export against its hash, then store the snapshot in this catalog",
  },
  verify: {
    module: "verify",
    term: "verify [options] <dir>",
    description: "check that a checkout is exactly what a snapshot recorded: its HEAD and every file of its tree",
  },
  diff: {
    module: "diff",
    term: "diff [options] <from> <to>",
    description: "compare two snapshots of one repository: the files that differ and a unified diff of their content",
  },
  resume: {
    module: "resume",
    term: "resume [options]",
    description:
      "resume a task on this host: each recorded checkout continues in place when it is still its snapshot, else is restored into a pooled worktree",
  },
  hold: {
    module: "hold",
    term: "hold [options] [dir]",
    description:
      "keep a paused task's live checkout (after its checkpoint): acquire and resume continue there while the hold lasts",
  },
  pool: {
    module: "pool",
    term: "pool",
    description: "this host's pool of restored worktrees: list them, prune free clean ones",
  },
  mcp: {
    module: "mcp",
    term: "mcp [options]",
    description: "serve Strata's tools to an agent harness over the Model Context Protocol (stdio)",
  },
};

export const COMMAND_MODULE_NAMES = Object.keys(MODULES) as ModuleName[];

/** Registers one module's commands. */
export async function registerModule(program: Command, module: string): Promise<void> {
  if (!Object.hasOwn(MODULES, module)) throw new Error(`no command module ${module}`);
  (await MODULES[module as ModuleName]())(program);
}

function commandNamed(name: string | undefined): TopCommand | undefined {
  return name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
}

/**
 * Every command as a name and a description only, for the list `strata --help` prints (and
 * commander's answer to a command it does not know).
 */
function registerSummaries(program: Command): void {
  const terms = new Map<Command, string>();
  for (const [name, { term, description }] of Object.entries(COMMANDS)) {
    const summary = new Command(name).description(description);
    terms.set(summary, term);
    program.addCommand(summary);
  }
  const help = new Help();
  program.configureHelp({ subcommandTerm: (cmd) => terms.get(cmd) ?? help.subcommandTerm(cmd) });
}

/**
 * Registers what `argv` needs: the module of the command it names (also after `help`), or the
 * summaries of every command when it names none or one the table does not know (help, a flag,
 * a typo: commander answers those with the whole list).
 */
export async function registerCommands(program: Command, argv: readonly string[]): Promise<void> {
  const named = commandNamed(argv[2]) ?? (argv[2] === "help" ? commandNamed(argv[3]) : undefined);
  if (named) await registerModule(program, named.module);
  else registerSummaries(program);
}
