// Starting a program, for the git runner. On Linux, when the small native module in
// native/git-spawn is built, programs start through posix_spawn: Node's own spawn forks, which
// copies the page tables of this whole process and makes every page it writes afterwards fault
// once, so each git started from a large process (the server, a worker, a capture) costs
// milliseconds of CPU and blocks the event loop meanwhile. posix_spawn's cost does not depend
// on the caller's size. Anywhere else, or when the module is missing, Node's spawn is used; the
// two behave the same for the runner: pipes for stdin, stdout and stderr, a process group of
// the child's own, `error` for a program that cannot start, `close` once it exited and its
// output was read.
import { spawn as nodeSpawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { accessSync, constants, statSync } from "node:fs";
import { createRequire } from "node:module";
import { Socket } from "node:net";
import { constants as os } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import type { Readable, Writable } from "node:stream";

export interface StartedProcess {
  readonly pid?: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  on(event: "error", listener: (error: NodeJS.ErrnoException) => void): this;
  on(event: "close", listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
}

export interface StartOptions {
  cwd: string;
  env: Record<string, string>;
}

interface NativeSpawn {
  available(): boolean;
  spawn(
    file: string,
    argv: string[],
    envp: string[],
    cwd: string,
    onExit: (code: number | null, signal: number | null) => void,
  ): [pid: number, stdin: number, stdout: number, stderr: number];
}

function loadNative(): NativeSpawn | null {
  if (process.platform !== "linux" || process.env.STRATA_NATIVE_SPAWN === "0") return null;
  try {
    // Loaded by Node at run time, never bundled: Next's bundler cannot place a native addon.
    const native = createRequire(import.meta.url)(/* turbopackIgnore: true */ "@strata/git-spawn") as NativeSpawn;
    return native.available() ? native : null;
  } catch {
    return null;
  }
}

const native = loadNative();

export type ProcessStarter = (file: string, args: readonly string[], options: StartOptions) => StartedProcess;

/** Node's spawn: a fork, then exec. */
export const forkStarter: ProcessStarter = (file, args, options) =>
  nodeSpawn(file, [...args], {
    cwd: options.cwd,
    env: options.env as NodeJS.ProcessEnv,
    stdio: ["pipe", "pipe", "pipe"],
    detached: process.platform !== "win32",
    windowsHide: true,
  });

/** posix_spawn through the native module, when it is built and the kernel has pidfds. */
export const posixSpawnStarter: ProcessStarter | null = native
  ? (file, args, options) => new SpawnedProcess(native, file, args, options)
  : null;

/** Starts `file` with `args`, in a process group of its own. */
export const startProcess: ProcessStarter = posixSpawnStarter ?? forkStarter;

const signalNames = new Map<number, NodeJS.Signals>();
for (const [name, number] of Object.entries(os.signals)) signalNames.set(number, name as NodeJS.Signals);

/**
 * The file a bare program name runs, found the way execvp finds it: in the child's PATH
 * (an empty entry is the working directory), the first regular file it may execute.
 */
export function findExecutable(file: string, env: Record<string, string>, cwd: string): string | null {
  if (file.includes("/")) return isAbsolute(file) ? file : resolve(cwd, file);
  for (const dir of (env.PATH ?? "/usr/local/bin:/usr/bin:/bin").split(delimiter)) {
    const candidate = join(dir === "" ? cwd : resolve(cwd, dir), file);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here.
    }
  }
  return null;
}

function spawnError(code: string, message: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(message);
  error.code = code;
  return error;
}

/**
 * Where each bare program name was found, by PATH: the runner starts the same git again and
 * again, and looking it up costs a few stats of PATH's directories each time. A start that
 * fails from a remembered file looks again once (git moved or was removed).
 */
const executables = new Map<string, string>();

type ExitListener = (code: number | null, signal: number | null) => void;

function launch(
  native: NativeSpawn,
  file: string,
  args: readonly string[],
  envp: string[],
  options: StartOptions,
  onExit: ExitListener,
) {
  const path = options.env.PATH ?? "";
  const key = !file.includes("/") && path.split(delimiter).every(isAbsolute) ? `${file}\u0000${path}` : null;
  const remembered = key === null ? undefined : executables.get(key);
  const executable = remembered ?? findExecutable(file, options.env, options.cwd);
  if (executable === null) throw spawnError("ENOENT", `spawn ${file} ENOENT`);
  try {
    const fds = native.spawn(executable, [file, ...args], envp, options.cwd, onExit);
    if (key !== null) executables.set(key, executable);
    return fds;
  } catch (error) {
    if (remembered !== undefined && key !== null) {
      executables.delete(key);
      return launch(native, file, args, envp, options, onExit);
    }
    const failure = error as NodeJS.ErrnoException;
    failure.message = `spawn ${file} ${failure.code ?? ""}: ${failure.message}`;
    throw failure;
  }
}

class SpawnedProcess extends EventEmitter implements StartedProcess {
  readonly pid: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  private waiting = 3; // stdout, stderr, exit
  private exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };

  constructor(native: NativeSpawn, file: string, args: readonly string[], options: StartOptions) {
    super();
    const envp = Object.entries(options.env).map(([key, value]) => `${key}=${value}`);
    // C strings end at a NUL: refuse what would be cut short, as Node's spawn does.
    if ([file, ...args, ...envp, options.cwd].some((text) => text.includes("\u0000"))) {
      throw new TypeError("A program, argument, environment entry or directory contains a NUL byte.");
    }
    let fds: [number, number, number, number];
    try {
      fds = launch(native, file, args, envp, options, (code, signal) => {
        this.exit = { code, signal: signal === null ? null : (signalNames.get(signal) ?? null) };
        this.settle();
      });
    } catch (error) {
      this.pid = undefined;
      this.stdin = new Socket().destroy();
      this.stdout = new Socket().destroy();
      this.stderr = new Socket().destroy();
      process.nextTick(() => this.emit("error", error));
      return;
    }
    const [pid, stdin, stdout, stderr] = fds;
    this.pid = pid;
    this.stdin = new Socket({ fd: stdin, readable: false, writable: true });
    this.stdout = new Socket({ fd: stdout, readable: true, writable: false });
    this.stderr = new Socket({ fd: stderr, readable: true, writable: false });
    for (const stream of [this.stdout, this.stderr]) stream.once("close", () => this.settle());
  }

  private settle(): void {
    if (--this.waiting > 0) return;
    if (!this.stdin.destroyed) this.stdin.destroy();
    this.emit("close", this.exit.code, this.exit.signal);
  }
}
