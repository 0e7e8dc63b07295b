// The process's structured log: pino, one JSON line per event on stderr (stdout stays for command
// output and --json), pretty when stderr is a terminal. Level from STRATA_LOG_LEVEL. Secrets never
// reach it: callers pass fields, never bodies or file contents, and the redact paths below blank
// any token, password, cookie or authorization field that slips in anyway.
import { pino, type DestinationStream, type Logger } from "pino";

type LogLevel = "debug" | "info" | "warn" | "error" | "silent";
const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error", "silent"];

/** Field paths whose values are replaced by "[redacted]" wherever they appear (two levels deep). */
const REDACTED_PATHS = [
  "token",
  "password",
  "cookie",
  "authorization",
  "secret",
  "body",
  "content",
  "*.token",
  "*.password",
  "*.cookie",
  "*.authorization",
  "*.secret",
  "*.body",
  "*.content",
  'headers["set-cookie"]',
  '*.headers["set-cookie"]',
  "*.headers.cookie",
  "*.headers.authorization",
];

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
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    },
    destination,
  );
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

/** An error as log fields: its code when it has one, its scrubbed message, and a stack for unexpected ones. */
export function errorFields(error: unknown): { code: string; message: string; stack?: string } {
  const e = error as { code?: unknown; message?: unknown; stack?: unknown; name?: unknown } | null | undefined;
  const code = typeof e?.code === "string" && /^[A-Z][A-Z0-9_]{1,63}$/.test(e.code) ? e.code : "INTERNAL";
  const message = scrubText(typeof e?.message === "string" ? e.message : String(error));
  const stack = code === "INTERNAL" && typeof e?.stack === "string" ? scrubText(e.stack) : undefined;
  return stack ? { code, message, stack } : { code, message };
}
