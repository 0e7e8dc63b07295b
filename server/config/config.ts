// The process configuration: one zod schema, read once at start-up. A bad value stops the
// process with a message that names the variable.
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { hostNameOfMachine } from "../domain/text.ts";

const databaseUrl = z
  .string()
  .trim()
  .refine((v) => /^(file:|postgres(ql)?:\/\/)/.test(v), {
    message: "must start with file: (SQLite) or postgresql:// (PostgreSQL)",
  });

/** Provider capabilities as STRATA_PROVIDERS names them (server/backends/providers.ts applies them). */
const PROVIDER_CAPABILITIES = {
  snapshots: { snapshots: true },
  "no-snapshots": { snapshots: false },
  "idle-persistent": { idlePersistentHolds: true },
  "no-idle-persistent": { idlePersistentHolds: false },
} as const;
type ProviderCapabilityName = keyof typeof PROVIDER_CAPABILITIES;

/** What STRATA_PROVIDERS set for each provider label it names. */
type ProviderSettings = Record<string, { snapshots?: boolean; idlePersistentHolds?: boolean }>;

/**
 * STRATA_PROVIDERS: `label:capability[,capability…]` entries separated by `;`, for example
 * `fly:idle-persistent,no-snapshots;modal:snapshots`. A label is a lineage key's backendKind;
 * capabilities are snapshots, no-snapshots, idle-persistent and no-idle-persistent. A label not
 * named keeps the defaults (snapshots, no idle persistence). Every problem is reported at once.
 */
const providersSchema = z.string().transform((text, ctx) => {
  const settings: ProviderSettings = {};
  const problems: string[] = [];
  for (const entry of text.split(";").map((e) => e.trim())) {
    if (entry === "") continue;
    const colon = entry.indexOf(":");
    const label = (colon < 0 ? entry : entry.slice(0, colon)).trim();
    if (colon < 0) {
      problems.push(`"${label}" needs its capabilities after a colon (label:capability,…)`);
      continue;
    }
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(label)) {
      problems.push(`"${label}" is not a provider label (letters, digits, '.', '_' and '-')`);
      continue;
    }
    if (Object.hasOwn(settings, label)) {
      problems.push(`${label} is named twice`);
      continue;
    }
    const names = entry
      .slice(colon + 1)
      .split(",")
      .map((c) => c.trim());
    const caps: ProviderSettings[string] = {};
    for (const name of names) {
      if (!Object.hasOwn(PROVIDER_CAPABILITIES, name)) {
        problems.push(`${label}: "${name}" is not a capability (${Object.keys(PROVIDER_CAPABILITIES).join(", ")})`);
        continue;
      }
      const cap = PROVIDER_CAPABILITIES[name as ProviderCapabilityName];
      const [field, value] = Object.entries(cap)[0] as [keyof typeof caps, boolean];
      if (caps[field] !== undefined) {
        problems.push(`${label}: ${field === "snapshots" ? "snapshots" : "idle-persistent"} is set twice`);
        continue;
      }
      caps[field] = value;
    }
    settings[label] = caps;
  }
  for (const message of problems) ctx.addIssue({ code: "custom", message });
  return problems.length > 0 ? z.NEVER : settings;
});

/** A `:`-separated list of absolute directories (PATH style); empty entries are ignored. */
const pathListSchema = z.string().transform((text, ctx) => {
  const entries = text
    .split(path.delimiter)
    .map((e) => e.trim())
    .filter((e) => e !== "");
  for (const entry of entries) {
    if (!path.isAbsolute(entry)) ctx.addIssue({ code: "custom", message: `${entry} is not an absolute path` });
  }
  return entries;
});

const envSchema = z.object({
  STRATA_DATA_DIR: z.string().trim().min(1).default("./.strata"),
  DATABASE_URL: databaseUrl.optional(),
  PORT: z.coerce.number().int().min(1).max(65535).default(3000),
  /// Interface the HTTP server binds to.
  STRATA_BIND: z.string().trim().min(1).default("127.0.0.1"),
  STRATA_LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  /// Signs dashboard session cookies. Every process serving one catalog needs the same value;
  /// without it a random one is kept in STRATA_DATA_DIR.
  STRATA_AUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  /// The address people open the dashboard at (sign-in checks request origins against it).
  STRATA_PUBLIC_URL: z.url().optional(),
  /// Sign-in attempts allowed per minute from one address.
  STRATA_SIGNIN_ATTEMPTS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(10),
  /// The worker host name: capture and restore jobs addressed to it run here (default: os.hostname()).
  STRATA_HOST: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, "letters, digits, '.', '_' and '-', starting with a letter or digit")
    .optional(),
  /// Seconds between lineage sweeps run by workers (0: never).
  STRATA_SWEEP_INTERVAL_SECONDS: z.coerce.number().int().min(0).default(3600),
  /// Seconds between garbage collections run by workers (0: never).
  STRATA_GC_INTERVAL_SECONDS: z.coerce.number().int().min(0).default(3600),
  /// A job whose worker stops renewing its claim for this long is handed to another worker.
  STRATA_JOB_LEASE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  /// The bearer token GET /metrics asks for (unset: no metrics endpoint, in the app or a worker).
  STRATA_METRICS_TOKEN: z
    .string()
    .trim()
    .regex(/^\S{16,}$/, "must be one word of at least 16 characters")
    .optional(),
  /// The port `strata worker` serves GET /metrics on, at STRATA_BIND (unset: none).
  STRATA_WORKER_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /// A capture or restore for a host with no live worker fails (NO_WORKER) after waiting this long (at most 30 days).
  STRATA_NO_WORKER_SECONDS: z.coerce.number().int().min(1).max(2_592_000).default(600),
  /// Workspace providers' capabilities by label (snapshots, idle-persistent live holds).
  STRATA_PROVIDERS: providersSchema.optional(),
  /// Directories a worker may capture from and restore into (path-list, ':'-separated).
  STRATA_WORKER_ROOTS: pathListSchema.optional(),
  /// Directories in which each agent owns the folder named after it (path-list, ':'-separated).
  STRATA_WORKER_AGENT_ROOTS: pathListSchema.optional(),
});

export interface Config {
  dataDir: string;
  databaseUrl: string;
  port: number;
  bind: string;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  authSecret: string | undefined;
  publicUrl: string;
  signInAttemptsPerMinute: number;
  host: string;
  sweepIntervalSeconds: number;
  gcIntervalSeconds: number;
  jobLeaseSeconds: number;
  /** The token of GET /metrics; undefined: no metrics endpoint. */
  metricsToken: string | undefined;
  /** Where `strata worker` serves its metrics; undefined: nowhere. */
  workerMetricsPort: number | undefined;
  /** How long a job waits for a host without a live worker before it fails with NO_WORKER. */
  noWorkerSeconds: number;
  /** Capabilities STRATA_PROVIDERS set, by provider label (the rest keep the defaults). */
  providers: ProviderSettings;
  /** What a worker may touch on its host (server/worktrees/host-access.ts); empty: the defaults. */
  workerRoots: string[];
  workerAgentRoots: string[];
}

export class ConfigError extends Error {
  readonly code = "CONFIG_INVALID";
  constructor(readonly problems: { variable: string; message: string }[]) {
    super("Invalid configuration:\n" + problems.map((p) => `  ${p.variable}: ${p.message}`).join("\n"));
    this.name = "ConfigError";
  }
}

type Environment = Record<string, string | undefined>;

/** Parses the variables a schema names; a bad value is a ConfigError naming the variable. */
function parseEnvironment<T extends z.ZodType>(schema: T, env: Environment): z.output<T> {
  // Empty strings mean "unset", as a shell `VAR=` usually intends.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ""));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? "environment"),
        message: issue.message,
      })),
    );
  }
  return parsed.data;
}

/** Reads the configuration from an environment (process.env by default). */
export function loadConfig(env: Environment = process.env): Config {
  const v = parseEnvironment(envSchema, env);
  const dataDir = path.resolve(v.STRATA_DATA_DIR);
  return {
    dataDir,
    databaseUrl: v.DATABASE_URL ?? `file:${path.join(dataDir, "strata.db")}`,
    port: v.PORT,
    bind: v.STRATA_BIND,
    logLevel: v.STRATA_LOG_LEVEL,
    authSecret: v.STRATA_AUTH_SECRET,
    signInAttemptsPerMinute: v.STRATA_SIGNIN_ATTEMPTS_PER_MINUTE,
    host: v.STRATA_HOST ?? defaultHost(),
    sweepIntervalSeconds: v.STRATA_SWEEP_INTERVAL_SECONDS,
    gcIntervalSeconds: v.STRATA_GC_INTERVAL_SECONDS,
    jobLeaseSeconds: v.STRATA_JOB_LEASE_SECONDS,
    metricsToken: v.STRATA_METRICS_TOKEN,
    workerMetricsPort: v.STRATA_WORKER_METRICS_PORT,
    noWorkerSeconds: v.STRATA_NO_WORKER_SECONDS,
    providers: v.STRATA_PROVIDERS ?? {},
    workerRoots: v.STRATA_WORKER_ROOTS ?? [],
    workerAgentRoots: v.STRATA_WORKER_AGENT_ROOTS ?? [],
    publicUrl: (v.STRATA_PUBLIC_URL ?? `http://localhost:${v.PORT}`).replace(/\/$/, ""),
  };
}

/** An http(s) address without a trailing slash. */
export const serverUrlSchema = z
  .string()
  .trim()
  .refine(
    (v) => {
      try {
        const url = new URL(v);
        return (url.protocol === "http:" || url.protocol === "https:") && !url.username && !url.password;
      } catch {
        return false;
      }
    },
    { message: "must be an http:// or https:// address without credentials (the token goes in STRATA_TOKEN)" },
  )
  .transform((v) => v.replace(/\/+$/, ""));

const clientEnvSchema = z.object({
  /// A Strata server the CLI works against instead of this machine's database.
  STRATA_SERVER_URL: serverUrlSchema.optional(),
  /// The agent token the CLI acts with, on a server or against this machine's database.
  STRATA_TOKEN: z.string().trim().regex(/^\S+$/, "must be one agent token (strata agent create prints one)").optional(),
});

/** What the CLI needs to act as an agent: where the catalog is, and the agent's token. */
export interface ClientConfig {
  serverUrl: string | undefined;
  token: string | undefined;
}

/** Reads the CLI's agent settings; a bad value stops with the variable named (never its value). */
export function loadClientConfig(env: Environment = process.env): ClientConfig {
  const v = parseEnvironment(clientEnvSchema, env);
  return { serverUrl: v.STRATA_SERVER_URL, token: v.STRATA_TOKEN };
}

/** The machine's name as a worker host name (characters a host name may not use become '-'). */
function defaultHost(): string {
  return hostNameOfMachine(os.hostname());
}

/** Names a database for people and logs, without credentials. */
export function describeDatabase(url: string): string {
  if (url.startsWith("file:")) return `SQLite at ${url.slice("file:".length)}`;
  try {
    const parsed = new URL(url);
    return `PostgreSQL at ${parsed.hostname}${parsed.port ? `:${parsed.port}` : ""}${parsed.pathname}`;
  } catch {
    return "PostgreSQL";
  }
}
