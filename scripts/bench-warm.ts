// npm run bench:warm — what a baseline's `dir` snapshot of its dependencies saves a new task.
//
// The fixture is a small express application (package.json + package-lock.json, express and its
// 70-odd dependencies from the registry, then from the local npm cache). Measured in the same run:
//   1. a new task's dependencies the naive way: `npm ci --prefer-offline` from the warm local npm
//      cache into a fresh checkout;
//   2. the same start with Strata: node_modules restored from the baseline's `dir` snapshot (the
//      catalog's blob store, SQLite by default), verified against the record before it is moved
//      into the checkout. Goal: ≤ 0.3x the wall time of 1.
//   3. the bytes a second dependency capture stores after a one-package change (dayjs added)
//      against that package's own size on disk. Goal: ≤ 1.2x.
// Each round checks that the restored tree loads (`require("express")`). Options:
// --rounds N (default 5), --db sqlite|postgres.
import { execFileSync } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { catalogContentStore } from "../server/backends/content-store.ts";
import { dirBackend } from "../server/backends/dir-backend.ts";
import type { DatabaseKind } from "../server/db/client.ts";
import { createOwner } from "../server/testing/content.ts";
import { createTestCatalog } from "../server/testing/catalog.ts";
import { loadAverage, median, timed } from "./bench-repo.ts";

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "5" }, db: { type: "string", default: "sqlite" } },
});
const ROUNDS = Math.max(1, Number(values.rounds));
const DB = values.db as DatabaseKind;
const WALL_GOAL = 0.3;
const BYTES_GOAL = 1.2;

const PACKAGE = { name: "warm-fixture", version: "1.0.0", private: true, dependencies: { express: "4.21.2" } };
const ADDED = { name: "dayjs", version: "1.11.13" };

function npm(cwd: string, args: string[]): void {
  execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, stdio: ["ignore", "ignore", "inherit"] });
}

/** Apparent bytes of the files below a path (what a capture reads). */
function fileBytes(path: string): number {
  const st = lstatSync(path);
  if (!st.isDirectory()) return st.isFile() ? st.size : 0;
  return readdirSync(path).reduce((sum, name) => sum + fileBytes(join(path, name)), 0);
}

function checkout(work: string, name: string, pkg: object, lock: string): string {
  const dir = join(work, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify(pkg, null, 2));
  writeFileSync(join(dir, "package-lock.json"), lock);
  writeFileSync(join(dir, "index.js"), "module.exports = require('express')();\n");
  return dir;
}

const ms = (v: number) => v.toFixed(0);
const kib = (v: number) => `${(v / 1024).toFixed(1)} KiB`;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "strata-bench-warm-"));
  const catalog = await createTestCatalog(DB);
  try {
    const { agentId } = await createOwner(catalog.db);
    const store = catalogContentStore(catalog.db, agentId);
    const cacheDir = join(work, "cache");
    const stateDir = join(work, "state");

    process.stdout.write("installing the fixture once (fills the local npm cache) …\n");
    const source = join(work, "source");
    mkdirSync(source);
    writeFileSync(join(source, "package.json"), JSON.stringify(PACKAGE, null, 2));
    npm(source, ["install", "--prefer-offline"]);
    const lock = execFileSync("cat", [join(source, "package-lock.json")]).toString();
    const packages = readdirSync(join(source, "node_modules")).filter((n) => !n.startsWith(".")).length;
    const depBytes = fileBytes(join(source, "node_modules"));

    const [captureMs, baseline] = await timed(() =>
      dirBackend.capture(source, { store, cacheDir, include: ["node_modules"] }),
    );
    process.stdout.write(
      `baseline dependencies: ${packages} packages, ${kib(depBytes)}; captured in ${ms(captureMs)} ms, stored ${kib(baseline.uploaded.bytes)} in ${baseline.uploaded.blobs} blobs\n`,
    );

    const naive: number[] = [];
    const warm: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      execFileSync("sync");
      const a = checkout(work, `naive-${round}`, PACKAGE, lock);
      const [npmMs] = await timed(() => npm(a, ["ci", "--prefer-offline"]));
      naive.push(npmMs);

      execFileSync("sync");
      const b = checkout(work, `warm-${round}`, PACKAGE, lock);
      const [restoreMs, outcome] = await timed(() =>
        dirBackend.restore(baseline.ref, b, { source: store, stateDir, mode: "add" }),
      );
      if (outcome.status !== "restored") throw new Error(`round ${round}: the restore was ${outcome.status}`);
      warm.push(restoreMs);
      for (const dir of [a, b]) execFileSync("node", ["-e", "require('./index.js')"], { cwd: dir });
      process.stdout.write(`round ${round}: npm ci ${ms(npmMs)} ms, dir restore ${ms(restoreMs)} ms\n`);
      rmSync(a, { recursive: true, force: true });
      rmSync(b, { recursive: true, force: true });
    }

    process.stdout.write(`adding ${ADDED.name}@${ADDED.version} and capturing the dependencies again …\n`);
    npm(source, ["install", "--prefer-offline", `${ADDED.name}@${ADDED.version}`]);
    const addedBytes = fileBytes(join(source, "node_modules", ADDED.name));
    const second = await dirBackend.capture(source, { store, cacheDir, include: ["node_modules"], previous: baseline.ref });

    const wallRatio = median(warm) / median(naive);
    const bytesRatio = second.uploaded.bytes / addedBytes;
    process.stdout.write(`\nwarm start, ${DB} catalog, ${ROUNDS} rounds, load ${loadAverage()}\n`);
    process.stdout.write(
      [
        `  npm ci --prefer-offline (warm npm cache)   median ${ms(median(naive))} ms`,
        `  dir snapshot restore, verified             median ${ms(median(warm))} ms   ${wallRatio.toFixed(2)}x (goal ≤ ${WALL_GOAL}x)`,
        `  second capture after adding ${ADDED.name}       stored ${kib(second.uploaded.bytes)} in ${second.uploaded.blobs} blobs; ${ADDED.name} is ${kib(addedBytes)}: ${bytesRatio.toFixed(2)}x (goal ≤ ${BYTES_GOAL}x)`,
        "",
      ].join("\n"),
    );
    process.stdout.write(wallRatio <= WALL_GOAL ? `goal met: wall ${wallRatio.toFixed(2)}x\n` : `goal MISSED: wall ${wallRatio.toFixed(2)}x > ${WALL_GOAL}x\n`);
    process.stdout.write(bytesRatio <= BYTES_GOAL ? `goal met: stored ${bytesRatio.toFixed(2)}x\n` : `goal MISSED: stored ${bytesRatio.toFixed(2)}x > ${BYTES_GOAL}x\n`);
  } finally {
    await catalog.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
