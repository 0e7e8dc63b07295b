// What a worker says about a catalog outage. Its loop, its housekeeping and its hand-back timer
// each report every failed try (several a second while the database is down); an operator needs
// the change of state instead: one line when the catalog stops answering, one a minute while it
// stays down, one when it answers again. This decides which of those a failure or an answer
// makes; the caller (cli/commands/worker.ts) writes the line.
import { isCatalogUnreachable } from "./catalog-outage.ts";

/** A line to log about the outage: `warn` while it lasts, `info` when it ends. */
export interface OutageLine {
  level: "warn" | "info";
  msg: string;
  fields: { since: string; failedTries: number; code?: string; seconds?: number };
}

export interface OutageLogOptions {
  /** The clock (tests inject one). */
  now?: () => number;
  /** At most one "still unreachable" line per this many ms (default one a minute). */
  repeatMs?: number;
}

/** The code an outage error carries (Prisma's P1001, a socket's ECONNREFUSED…), never its text. */
function outageCode(error: unknown): string {
  const e = error as { code?: unknown; errorCode?: unknown } | null | undefined;
  for (const code of [e?.code, e?.errorCode])
    if (typeof code === "string" && /^[A-Z0-9_]{2,64}$/.test(code)) return code;
  return "UNAVAILABLE";
}

export class OutageLog {
  private readonly now: () => number;
  private readonly repeatMs: number;
  private since: number | null = null;
  private failedTries = 0;
  private lastLine = 0;

  constructor(opts: OutageLogOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.repeatMs = opts.repeatMs ?? 60_000;
  }

  /** Whether the catalog is unreachable as far as this worker knows. */
  get unreachable(): boolean {
    return this.since !== null;
  }

  /**
   * A try failed with `error`. Not an outage: `handled` is false and the caller logs the error as
   * usual. An outage: `handled` is true, and `line` is what to log now (null: nothing).
   */
  failed(error: unknown): { handled: boolean; line: OutageLine | null } {
    if (!isCatalogUnreachable(error)) return { handled: false, line: null };
    const now = this.now();
    this.failedTries += 1;
    if (this.since === null) {
      this.since = now;
      this.lastLine = now;
      return {
        handled: true,
        line: {
          level: "warn",
          msg: `catalog unreachable since ${new Date(now).toISOString()}, retrying`,
          fields: { since: new Date(now).toISOString(), failedTries: 1, code: outageCode(error) },
        },
      };
    }
    if (now - this.lastLine < this.repeatMs) return { handled: true, line: null };
    this.lastLine = now;
    const since = new Date(this.since).toISOString();
    return {
      handled: true,
      line: {
        level: "warn",
        msg: `catalog still unreachable since ${since}, ${this.failedTries} failed tries`,
        fields: { since, failedTries: this.failedTries, code: outageCode(error) },
      },
    };
  }

  /** The catalog answered: the line that ends an outage, or null when there was none. */
  answered(): OutageLine | null {
    if (this.since === null) return null;
    const seconds = Math.round((this.now() - this.since) / 1000);
    const line: OutageLine = {
      level: "info",
      msg: `catalog reachable again after ${seconds} s`,
      fields: { since: new Date(this.since).toISOString(), failedTries: this.failedTries, seconds },
    };
    this.since = null;
    this.failedTries = 0;
    return line;
  }
}
