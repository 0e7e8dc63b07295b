// The process's structured log: pino, one JSON line per event on stderr (stdout stays for command
// output and --json), pretty when stderr is a terminal. Level from STRATA_LOG_LEVEL. Secrets never
// reach it: callers pass fields, never bodies or file contents, and redactFields below blanks any
// token, password, cookie or authorization field that slips in anyway.
import { pino, type DestinationStream, type Logger } from "pino";

type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error", "silent"];

/** Fields whose values never reach the log (any case), at any of the first four levels of a line. */
const SECRET_FIELDS = new Set(["token", "password", "cookie", "authorization", "secret", "body", "content"]);
/** Names blanked inside any `headers` object among them. */
const SECRET_HEADERS = new Set(["cookie", "authorization", "set-cookie"]);
const CENSOR = "[redacted]";
/** Levels below the line's own fields that are searched (a line is fields, not documents). */
const REDACT_DEPTH = 3;

function blanked(value: object, depth: number, inHeaders: boolean): object {
  let copy: object | null = null;
  // An array's keys are indexes, never a secret's name: only its objects are searched (a long
  // list of paths costs nothing).
  const keys = Array.isArray(value) ? null : Object.keys(value);
  const count = keys ? keys.length : (value as unknown[]).length;
  for (let i = 0; i < count; i++) {
    const key = keys ? keys[i]! : i;
    const field = (value as Record<string | number, unknown>)[key];
    let next = field;
    const name = keys ? (key as string).toLowerCase() : "";
    if (SECRET_FIELDS.has(name) || (inHeaders && SECRET_HEADERS.has(name))) next = CENSOR;
    else if (typeof field === "object" && field !== null && depth < REDACT_DEPTH) {
      next = blanked(field, depth + 1, key === "headers");
    }
    if (next === field) continue;
    // Copied on the first change only (most lines have nothing to blank), keeping the prototype
    // and the non-enumerable properties (an Error's message and stack); the caller's object is
    // never changed.
    copy ??= keys
      ? Object.create(Object.getPrototypeOf(value), Object.getOwnPropertyDescriptors(value))
      : [...(value as unknown[])];
    Object.defineProperty(copy, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return copy ?? value;
}

/**
 * A line's fields (or a child logger's bindings) with every secret field replaced by
 * "[redacted]". It replaces pino's path-based redact option, which parsed its paths again for
 * every line and cost several times what the rest of the line does.
 */
function redactFields<T extends object>(fields: T): T {
  return blanked(fields, 0, false) as T;
}

export interface LoggingOptions {
  level?: LogLevel;
  /** Where lines go (default: stderr). */
  destination?: DestinationStream;
  /** Human-readable lines instead of JSON (default: when stderr is a terminal and no destination is given). */
  pretty?: boolean;
}

function levelFromEnvironment(): LogLevel {
  const value = process.env.STRATA_LOG_LEVEL?.trim();
  return LOG_LEVELS.find((l) => l === value) ?? "info";
}

/**
 * The level before an entry point configures logging. Inside vitest it is silent unless
 * STRATA_LOG_LEVEL says otherwise: services tests call directly would otherwise fill the test
 * output with their run lines (a test of the log configures its own destination).
 */
function unconfiguredLevel(): LogLevel {
  return process.env.VITEST && !process.env.STRATA_LOG_LEVEL ? "silent" : levelFromEnvironment();
}

function makeLogger(level: LogLevel, destination: DestinationStream): Logger {
  const log = pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: redactFields },
    },
    destination,
  );
  // pino formats a child's bindings with no formatter, so they are blanked on the way in (a
  // child's own children inherit this method).
  const child = log.child;
  log.child = function (this: Logger, bindings, options) {
    return child.call(this, redactFields(bindings), options);
  } as Logger["child"];
  return log;
}

// One logger per process, kept on globalThis: the Next app's bundle and the CLI's each carry a
// copy of this module, and both must write through the one `strata serve` configured.
const HOLDER = Symbol.for("strata.logger");
type Holder = { logger: Logger };
const holder = (): Holder => {
  const g = globalThis as { [HOLDER]?: Holder };
  return (g[HOLDER] ??= {
    logger: makeLogger(unconfiguredLevel(), pino.destination({ fd: 2, sync: true })),
  });
};

/** The process's logger (JSON on stderr at STRATA_LOG_LEVEL until configureLogging is called). */
export function logger(): Logger {
  return holder().logger;
}

/** Sets the process's logger up: entry points call it once, after reading the configuration. */
export async function configureLogging(opts: LoggingOptions = {}): Promise<Logger> {
  const level = opts.level ?? levelFromEnvironment();
  const pretty = opts.pretty ?? (!opts.destination && process.stderr.isTTY === true);
  let destination = opts.destination ?? pino.destination({ fd: 2, sync: true });
  if (pretty) {
    // Loaded only for a terminal: a process logging JSON never pays for it.
    const { default: prettyStream } = await import("pino-pretty");
    destination = prettyStream({ destination: opts.destination ?? 2, sync: true, translateTime: "SYS:HH:MM:ss.l" });
  }
  holder().logger = makeLogger(level, destination);
  return holder().logger;
}

const SCRUBS: [RegExp, string][] = [
  [/strata_[A-Za-z0-9_-]{6,}/g, "strata_[redacted]"],
  [/\b(Bearer|Basic)\s+\S+/gi, "$1 [redacted]"],
  [/(\/\/)[^/@\s]+@/g, "$1[redacted]@"],
  [/\b(password|passwd|secret|token|cookie)=\S+/gi, "$1=[redacted]"],
];

/** A message for the log: agent tokens, credentials in URLs and bearer values blanked, cut to 2000 characters. */
export function scrubText(text: string): string {
  let out = text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
  for (const [pattern, replacement] of SCRUBS) out = out.replace(pattern, replacement);
  return out;
}

/** A line of a Prisma message's code excerpt ("  12 const x = …", "→ 13 await db.job.findMany(") or its location. */
const EXCERPT_LINE = /^(→\s*)?\d+\s|^Invalid `[^`]*` invocation|^\S+:\d+:\d+$/;

/**
 * A message on one line. Prisma's ("Invalid `prisma.job.findMany()` invocation in <file>", the
 * calling code, then what happened) is reduced to its last line that is not the excerpt; any
 * other multi-line message is joined with " / ".
 */
function oneLine(message: string, code: string): string {
  const lines = message
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  if (/Invalid `[^`]*` invocation/.test(message)) {
    return lines.filter((l) => !EXCERPT_LINE.test(l)).at(-1) ?? code;
  }
  return lines.join(" / ");
}

/** The code of an error: its own (`code`, or a Prisma initialization error's `errorCode`) when it looks like one. */
function codeOf(e: { code?: unknown; errorCode?: unknown } | null | undefined): string {
  for (const code of [e?.code, e?.errorCode]) {
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]{1,63}$/.test(code)) return code;
  }
  return "INTERNAL";
}

/**
 * An error as log fields: its code when it has one, its scrubbed message on one line, and a stack
 * (its frames under that line) for unexpected ones.
 */
export function errorFields(error: unknown): { code: string; message: string; stack?: string } {
  const e = error as { code?: unknown; errorCode?: unknown; message?: unknown; stack?: unknown } | null | undefined;
  const code = codeOf(e);
  const message = scrubText(oneLine(typeof e?.message === "string" ? e.message : String(error), code));
  if (code !== "INTERNAL" || typeof e?.stack !== "string") return { code, message };
  const frames = e.stack.split("\n").filter((l) => /^\s+at /.test(l));
  return { code, message, stack: scrubText([message, ...frames].join("\n")) };
}
