// Test support: a private PostgreSQL cluster (initdb + pg_ctl from the system's PostgreSQL) that
// a test starts, stops and starts again, to see what the app does while its database is down.
// Never the shared server: this cluster has its own data directory, port and socket directory,
// and is removed when the test ends.
import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { freePort } from "./ports.ts";

const run = promisify(execFile);

export interface PrivatePostgres {
  /** The cluster's `postgres` database as the superuser `postgres` (trust auth, 127.0.0.1 only). */
  url: string;
  port: number;
  /** Starts the cluster again after stop(), on the same port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops the cluster (fast shutdown: open connections are terminated); resolves once it is down. */
  stop(): Promise<void>;
  /** Stops the cluster if it runs and removes its files. */
  destroy(): Promise<void>;
}

/** Debian and Ubuntu keep the server binaries off PATH, one directory per major version. */
const DEBIAN_POSTGRES = "/usr/lib/postgresql";

/**
 * The directory holding initdb and pg_ctl: STRATA_TEST_PG_BIN, else the one on PATH, else the
 * newest of Debian's PostgreSQL versions.
 */
function postgresBinDir(): string {
  const configured = process.env.STRATA_TEST_PG_BIN;
  if (configured) return configured;
  const onPath = (process.env.PATH ?? "")
    .split(path.delimiter)
    .find((dir) => dir && existsSync(path.join(dir, "initdb")));
  if (onPath) return onPath;
  const versions = existsSync(DEBIAN_POSTGRES)
    ? readdirSync(DEBIAN_POSTGRES)
        .filter((v) => existsSync(path.join(DEBIAN_POSTGRES, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return path.join(DEBIAN_POSTGRES, versions[0], "bin");
  throw new Error(
    "initdb and pg_ctl were not found: install PostgreSQL's server package, or set STRATA_TEST_PG_BIN to the directory that holds them.",
  );
}

/** initdb refuses to run as root: then the cluster belongs to (and runs as) the user nobody. */
function clusterOwner(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const uid = Number(execFileSync("id", ["-u", "nobody"], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", "nobody"], { encoding: "utf8" }).trim());
  return { uid, gid };
}

/** Creates and starts a private cluster in a fresh temporary directory. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  const owner = clusterOwner();
  const root = mkdtempSync(path.join(os.tmpdir(), "strata-private-pg-"));
  if (owner) chownSync(root, owner.uid, owner.gid);
  const data = path.join(root, "data");
  const log = path.join(root, "postgres.log");
  const port = await freePort();
  const as = { ...(owner ?? {}), cwd: root, env: { ...process.env, LC_ALL: "C" } };
  const pgCtl = (...args: string[]) => run(path.join(bin, "pg_ctl"), ["-D", data, ...args], as);

  let running = false;
  // A test process that ends without destroy() (a hang, a timeout) still stops its cluster.
  const stopAtExit = () => {
    if (!running) return;
    try {
      execFileSync(path.join(bin, "pg_ctl"), ["-D", data, "stop", "-m", "immediate", "-w"], { ...as, stdio: "ignore" });
    } catch {
      // Already gone.
    }
  };
  process.once("exit", stopAtExit);
  const cluster: PrivatePostgres = {
    url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      // The socket directory is the cluster's own; fsync off: nothing here must survive a crash.
      const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${root} -c fsync=off -c max_connections=60`;
      await pgCtl("start", "-w", "-t", "30", "-l", log, "-o", options);
      running = true;
    },
    async stop() {
      await pgCtl("stop", "-w", "-t", "30", "-m", "fast");
      running = false;
    },
    async destroy() {
      try {
        if (running) await cluster.stop();
      } finally {
        process.removeListener("exit", stopAtExit);
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
  try {
    await run(
      path.join(bin, "initdb"),
      ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
      as,
    );
    await cluster.start();
  } catch (error) {
    process.removeListener("exit", stopAtExit);
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  return cluster;
}
