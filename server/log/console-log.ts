// Third-party code in the server process (Next.js above all) writes with console.*: plain, often
// coloured lines among the JSON ones. `strata serve` sends them through the process's logger
// instead, so every line on stderr is one JSON object an operator's tools can read.
import { format } from "node:util";
import { logger, scrubText } from "./logger.ts";

type ConsoleMethod = "log" | "info" | "warn" | "error" | "debug";
const LEVELS: Record<ConsoleMethod, "info" | "warn" | "error" | "debug"> = {
  log: "info",
  info: "info",
  warn: "warn",
  error: "error",
  debug: "debug",
};

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;
/** Next's status glyphs ("✓ Ready", "⚠ …", "⨯ …", "▲ Next.js …") say what the level says. */
const GLYPH = /^\s*[✓⚠⨯▲○●ƒ]\s*/u;

/** The text of a console call as one message: formatted as console would, without colours or a leading glyph. */
export function consoleText(args: unknown[]): string {
  return scrubText(
    format(...args)
      .replace(ANSI, "")
      .replace(GLYPH, "")
      .trim(),
  );
}

/**
 * Sends console.log/info/warn/error/debug through the process's logger, as lines with
 * `component`; returns the function that puts console back. Empty messages are dropped.
 */
export function routeConsoleToLog(component: string): () => void {
  const saved = new Map<ConsoleMethod, (...args: unknown[]) => void>();
  for (const method of Object.keys(LEVELS) as ConsoleMethod[]) {
    saved.set(method, console[method]);
    console[method] = (...args: unknown[]) => {
      const text = consoleText(args);
      if (text !== "") logger()[LEVELS[method]]({ component }, text);
    };
  }
  return () => {
    for (const [method, original] of saved) console[method] = original;
  };
}
