// The one place that starts git. A git call is plain data (`GitCommand`): arguments built by a
// pure function and a parser for what git printed. The runner owns everything else: spawning
// without a shell, the environment, stdin, binary-safe output, timeouts, abort and the mapping
// of failures to typed errors.
import { stat } from "node:fs/promises";
import { StrataError, type ErrorCode } from "../domain/errors.ts";
import { startProcess } from "./process.ts";

export interface GitOutput {
  stdout: Buffer;
  /** Decoded as UTF-8 and capped; for people, and for recognising well-known failures. */
  stderr: string;
  exitCode: number;
}

export interface GitCommand<T> {
  /** Everything after `git`. Values from outside are placed by the argument helpers below. */
  readonly args: readonly string[];
  readonly parse: (output: GitOutput) => T;
  /** Exit codes that are answers rather than failures (for example 1 from `check-ignore`). */
  readonly okExitCodes?: readonly number[];
  /**
   * What git reads on stdin. A promise starts git at once and hands it the input when known, so
   * its start-up overlaps other work; if the promise rejects, git is stopped and the call rejects
   * with that reason.
   */
  readonly input?: string | Uint8Array | Promise<string | Uint8Array>;
  /** Variables added for this call only, such as GIT_INDEX_FILE for the private index. */
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
  readonly maxOutputBytes?: number;
}

export interface GitRunnerOptions {
  /** The directory git runs in. */
  cwd: string;
  /** The git executable; `git` from PATH by default. */
  gitPath?: string;
  /** The environment to start from; process.env by default. Scrubbed either way. */
  baseEnv?: Readonly<Record<string, string | undefined>>;
  timeoutMs?: number;
  signal?: AbortSignal;
  maxOutputBytes?: number;
}

export interface GitRunner {
  readonly cwd: string;
  run<T>(command: GitCommand<T>): Promise<T>;
  /** The same runner in another directory (a submodule, a scratch repository). */
  at(cwd: string, overrides?: Partial<Omit<GitRunnerOptions, "cwd">>): GitRunner;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT = 512 * 1024 * 1024;
const STDERR_KEEP = 64 * 1024;

/** `data.reason` of the GIT_FAILED error raised when a command printed more than allowed. */
const OUTPUT_LIMIT = "output-limit";

export function isOutputLimit(error: unknown): boolean {
  return error instanceof StrataError && error.data?.reason === OUTPUT_LIMIT;
}

// GIT_* variables that are the user's own choices about how git reaches the network or finds
// its installation. Every other GIT_* variable is dropped: GIT_DIR, GIT_INDEX_FILE,
// GIT_CONFIG_PARAMETERS and friends would silently point a call at another repository, index
// or configuration (they are set, for example, when Strata runs inside a git hook).
const KEPT_GIT_VARIABLES = new Set([
  "GIT_EXEC_PATH",
  "GIT_SSH",
  "GIT_SSH_COMMAND",
  "GIT_SSH_VARIANT",
  "GIT_SSL_CAINFO",
  "GIT_SSL_CAPATH",
  "GIT_PROXY_COMMAND",
  "GIT_CONFIG_GLOBAL",
  "GIT_CONFIG_SYSTEM",
  "GIT_CONFIG_NOSYSTEM",
]);

/**
 * The environment of every git call. System and global configuration stay in effect on
 * purpose (no GIT_CONFIG_NOSYSTEM): excludes, core.autocrlf and filter drivers set there decide
 * what the user's own git sees, and a capture must see the checkout the same way.
 */
export function gitEnvironment(
  base: Readonly<Record<string, string | undefined>>,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) {
    if (value === undefined) continue;
    if (key.startsWith("GIT_") && !KEPT_GIT_VARIABLES.has(key)) continue;
    env[key] = value;
  }
  Object.assign(env, {
    GIT_TERMINAL_PROMPT: "0",
    GIT_PAGER: "cat",
    PAGER: "cat",
    LC_ALL: "C",
    LANGUAGE: "C",
    // Reading commands (status, diff) must never refresh and rewrite the user's index.
    GIT_OPTIONAL_LOCKS: "0",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_ADVICE: "0",
  });
  return Object.assign(env, extra);
}

// ---------------------------------------------------------------------------------------------
// Argument helpers: the only way a value from outside (a ref, a remote, a path) becomes an
// argument.

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A revision or ref name. Refused when it could be read as an option or smuggle bytes. */
export function refArg(value: string, what = "ref"): string {
  if (value.length === 0 || value.startsWith("-") || CONTROL.test(value) || /\s/.test(value)) {
    throw new StrataError("INVALID_INPUT", `Refusing an unsafe ${what} argument.`, {
      hint: `A ${what} may not be empty, start with "-", or contain spaces or control characters.`,
    });
  }
  return value;
}

/**
 * Paths as arguments: always after `--`, so a file named `--force` stays a file. A NUL byte is
 * refused; other control characters are legal in file names and harmless after `--`.
 */
export function pathArgs(paths: readonly string[]): string[] {
  for (const path of paths) {
    if (path.includes("\u0000")) throw new StrataError("INVALID_INPUT", "Refusing a path that contains a NUL byte.");
  }
  return ["--", ...paths];
}

/** NUL-terminated records for `-z --stdin` style input. */
export function nulInput(records: readonly string[]): string {
  for (const record of records) {
    if (record.includes("\u0000")) throw new StrataError("INVALID_INPUT", "Refusing input that contains a NUL byte.");
  }
  return records.map((r) => `${r}\u0000`).join("");
}

/** Splits NUL-terminated output, dropping the empty tail. */
export function splitNul(buffer: Buffer): string[] {
  if (buffer.length === 0) return [];
  const parts = decodeUtf8(buffer).split("\u0000");
  if (parts.at(-1) === "") parts.pop();
  return parts;
}

/** Lines of text output, without the trailing empty line. */
export function splitLines(buffer: Buffer): string[] {
  const text = decodeUtf8(buffer);
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Strict UTF-8. A file name that is not valid UTF-8 cannot be written into a JSON manifest
 * faithfully, so it is refused by name (escaped) rather than silently mangled.
 */
export function decodeUtf8(buffer: Buffer): string {
  try {
    return utf8.decode(buffer);
  } catch {
    const shown = JSON.stringify(buffer.toString("latin1").slice(0, 200));
    throw new StrataError("UNREADABLE_PATH", `git printed a name that is not valid UTF-8: ${shown}`, {
      hint: "Rename the file to a UTF-8 name, or list it in .strata/snapshot-ignore.",
      data: { path: shown },
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Failures

/** Removes credentials from anything that may carry a URL (stderr of fetch, for example). */
export function redactCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, "$1");
}

function firstMeaningfulLine(stderr: string): string {
  const line = stderr
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l.startsWith("fatal:") || l.startsWith("error:"));
  return line ?? stderr.trim().split("\n")[0] ?? "";
}

/** Recognises the failures callers tell apart; everything else is GIT_FAILED. */
function classifyFailure(subcommand: string, output: GitOutput): StrataError {
  const stderr = redactCredentials(output.stderr);
  const summary = firstMeaningfulLine(stderr).slice(0, 500);
  const data = { subcommand, exitCode: output.exitCode, stderr: stderr.slice(-4000) };
  if (/not a git repository|must be run in a work tree/i.test(stderr)) {
    return new StrataError("NOT_A_REPOSITORY", `Not inside a git working tree: ${summary}`, {
      hint: "Run the capture in a directory of a git checkout (not a bare repository).",
      data,
    });
  }
  if (/detected dubious ownership/i.test(stderr)) {
    return new StrataError("NOT_A_REPOSITORY", `git refuses this repository: ${summary}`, {
      hint: "The repository is owned by another user; add it to safe.directory if you trust it.",
      data,
    });
  }
  const unreadable =
    /(?:open|opendir|lstat|stat|readlink)\("?(.+?)"?\): (?:Permission denied|Too many levels of symbolic links)/.exec(
      stderr,
    ) ?? /could not open directory '(.+?)': Permission denied/.exec(stderr);
  if (unreadable) {
    return unreadablePath(unreadable[1] ?? "", summary, data);
  }
  return new StrataError("GIT_FAILED", `git ${subcommand} failed (exit ${output.exitCode}): ${summary}`, { data });
}

export function unreadablePath(path: string, why: string, data: Record<string, unknown> = {}): StrataError {
  return new StrataError("UNREADABLE_PATH", `Cannot read ${JSON.stringify(path)}: ${why}`, {
    hint: "Make the path readable, or list it in .strata/snapshot-ignore, then capture again.",
    data: { ...data, path },
  });
}

function runnerError(code: ErrorCode, message: string, subcommand: string, cause?: unknown): StrataError {
  return new StrataError(code, message, { data: { subcommand }, cause });
}

// ---------------------------------------------------------------------------------------------
// The runner

export function createGitRunner(options: GitRunnerOptions): GitRunner {
  const gitPath = options.gitPath ?? "git";
  const base = options.baseEnv ?? process.env;
  return {
    cwd: options.cwd,
    at(cwd, overrides = {}) {
      return createGitRunner({ ...options, ...overrides, cwd });
    },
    async run<T>(command: GitCommand<T>): Promise<T> {
      const t0 = performance.now();
      const output = await spawnGit(gitPath, command, {
        cwd: options.cwd,
        env: gitEnvironment(base, command.env),
        timeoutMs: command.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        maxOutputBytes: command.maxOutputBytes ?? options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT,
        signal: options.signal,
      });
      if (process.env.STRATA_GIT_TRACE) trace(command.args, performance.now() - t0, output.exitCode);
      const ok = command.okExitCodes ?? [0];
      if (!ok.includes(output.exitCode)) throw classifyFailure(subcommandOf(command.args), output);
      return command.parse(output);
    },
  };
}

/** STRATA_GIT_TRACE=1: one line per git call on stderr (arguments shortened), for profiling. */
function trace(args: readonly string[], ms: number, exitCode: number): void {
  process.stderr.write(`[git ${ms.toFixed(1)} ms, exit ${exitCode}] ${args.join(" ").slice(0, 100)}\n`);
}

/** The subcommand's name, for messages: the first argument that is not a global option. */
export function subcommandOf(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "-c" || arg === "-C") {
      i++;
      continue;
    }
    if (!arg.startsWith("-")) return arg;
  }
  return "git";
}

interface SpawnSettings {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
  signal: AbortSignal | undefined;
}

async function spawnGit(gitPath: string, command: GitCommand<unknown>, s: SpawnSettings): Promise<GitOutput> {
  const subcommand = subcommandOf(command.args);
  for (const arg of command.args) {
    if (arg.includes("\u0000"))
      throw new StrataError("INVALID_INPUT", "Refusing an argument that contains a NUL byte.");
  }
  if (s.signal?.aborted) throw runnerError("ABORTED", `git ${subcommand} was not started: aborted.`, subcommand);

  return new Promise<GitOutput>((resolve, reject) => {
    // A process group of its own, so a timeout or an abort also ends what git started
    // (ssh, remote helpers, filters).
    const child = startProcess(gitPath, command.args, { cwd: s.cwd, env: s.env });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = "";
    let settled = false;
    let stopReason: "timeout" | "abort" | "overflow" | "input" | null = null;
    let inputError: unknown = null;

    const stop = (reason: "timeout" | "abort" | "overflow" | "input") => {
      if (stopReason) return;
      stopReason = reason;
      try {
        if (child.pid !== undefined) process.kill(process.platform === "win32" ? child.pid : -child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    // The time limit counts from when git has its input: waiting for it is not git being slow.
    let timer: NodeJS.Timeout | undefined;
    const startTimer = () => {
      if (!settled) timer = setTimeout(() => stop("timeout"), s.timeoutMs);
    };
    const onAbort = () => stop("abort");
    s.signal?.addEventListener("abort", onAbort, { once: true });

    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.signal?.removeEventListener("abort", onAbort);
      fn();
    };

    child.stdout.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > s.maxOutputBytes) {
        stop("overflow");
        return;
      }
      chunks.push(chunk);
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text: string) => {
      stderr = (stderr + text).slice(-STDERR_KEEP);
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      finish(() => {
        void explainSpawnError(error, gitPath, s.cwd, subcommand).then(reject, reject);
      });
    });
    child.on("close", (code) => {
      finish(() => {
        if (stopReason === "timeout") {
          reject(runnerError("TIMEOUT", `git ${subcommand} did not finish within ${s.timeoutMs} ms.`, subcommand));
        } else if (stopReason === "abort") {
          reject(runnerError("ABORTED", `git ${subcommand} was aborted.`, subcommand));
        } else if (stopReason === "input") {
          reject(inputError);
        } else if (stopReason === "overflow") {
          reject(
            new StrataError("GIT_FAILED", `git ${subcommand} printed more than ${s.maxOutputBytes} bytes.`, {
              data: { subcommand, reason: OUTPUT_LIMIT },
            }),
          );
        } else if (code === null) {
          reject(runnerError("GIT_FAILED", `git ${subcommand} was killed by a signal.`, subcommand));
        } else {
          resolve({ stdout: Buffer.concat(chunks, size), stderr, exitCode: code });
        }
      });
    });

    // git may exit before reading everything (a failure); its exit code tells the story.
    child.stdin.on("error", () => undefined);
    const input = command.input ?? "";
    if (typeof input === "string" || input instanceof Uint8Array) {
      startTimer();
      child.stdin.end(input);
    } else {
      input.then(
        (bytes) => {
          startTimer();
          child.stdin.end(bytes);
        },
        (error: unknown) => {
          inputError = error;
          stop("input");
        },
      );
    }
  });
}

async function explainSpawnError(
  error: NodeJS.ErrnoException,
  gitPath: string,
  cwd: string,
  subcommand: string,
): Promise<StrataError> {
  if (error.code === "ENOENT" || error.code === "EACCES") {
    // Node reports a missing working directory as ENOENT too: tell the two apart.
    const where = await stat(cwd).then(
      (st) => (st.isDirectory() ? "ok" : "not-a-directory"),
      () => "missing",
    );
    if (where !== "ok") {
      return new StrataError("NOT_A_REPOSITORY", `The directory ${JSON.stringify(cwd)} does not exist.`, {
        data: { subcommand },
        cause: error,
      });
    }
    return new StrataError("GIT_UNAVAILABLE", `git could not be started (${error.code}): ${gitPath}`, {
      hint: "Install git, or put it on PATH.",
      data: { subcommand },
      cause: error,
    });
  }
  return runnerError("GIT_FAILED", `git ${subcommand} could not be started: ${error.message}`, subcommand, error);
}
