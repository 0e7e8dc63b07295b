// npm run bench:warm — what a baseline's dependency cache saves a new task.
//
// The fixture is a small express application in git (package.json, package-lock.json, express and
// its dependencies from the registry, then from the local npm cache), pushed to a local bare
// origin; a fresh clone with `npm ci` done is published as the baseline with its node_modules as
// the cache of its envHash (`strata capture --baseline --deps`). Measured in the same run, each
// round into a new directory through the product's own acquire-and-restore:
//   1. the naive start: the baseline restored without dependencies, then `npm ci --prefer-offline`
//      from the warm local npm cache;
//   2. the warm start: the baseline restored with the cache of its envHash added, verified.
//      Goal: ≤ 0.3x the wall time of 1 (the dependencies alone are printed too).
//   3. the bytes the next baseline's dependency capture stores after one package (dayjs) is added
//      and the lockfile changes, against that package's size on disk. Goal: ≤ 1.2x.
// Each round checks that the application loads (`require("express")`). Options: --rounds N
// (default 5), --db sqlite|postgres.
import { execFileSync } from "node:child_process";
import { lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { captureAndPublish, localCatalog } from "../server/capture/capture-publish.ts";
import type { DatabaseKind } from "../server/db/client.ts";
import { acquireAndRestore, localRestorePort } from "../server/restore/restore-snapshot.ts";
import { createTestCatalog } from "../server/testing/catalog.ts";
import { makeAgent } from "../server/testing/lineage.ts";
import { git, loadAverage, timed } from "./bench-repo.ts";
import { median } from "./stats.ts";

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
  execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd,
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/** Apparent bytes of the files below a path (what a capture reads). */
function fileBytes(path: string): number {
  const st = lstatSync(path);
  if (!st.isDirectory()) return st.isFile() ? st.size : 0;
  return readdirSync(path).reduce((sum, name) => sum + fileBytes(join(path, name)), 0);
}

const ms = (v: number) => v.toFixed(0);
const kib = (v: number) => `${(v / 1024).toFixed(1)} KiB`;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "strata-bench-warm-"));
  const catalog = await createTestCatalog(DB);
  try {
    const { scope } = await makeAgent(catalog.db);
    const stateDir = join(work, "state");

    process.stdout.write("making the fixture: express in git, installed once (fills the local npm cache) …\n");
    const upstream = join(work, "upstream");
    const origin = join(work, "origin.git");
    execFileSync("mkdir", ["-p", upstream, origin]);
    writeFileSync(join(upstream, "package.json"), JSON.stringify(PACKAGE, null, 2));
    writeFileSync(join(upstream, "index.js"), "module.exports = require('express')();\n");
    writeFileSync(join(upstream, ".gitignore"), "node_modules/\n");
    npm(upstream, ["install", "--prefer-offline", "--package-lock-only"]);
    git(upstream, ["init", "--quiet", "--initial-branch=main"]);
    git(upstream, ["add", "-A"]);
    git(upstream, ["commit", "--quiet", "-m", "express app"]);
    git(origin, ["init", "--quiet", "--bare", "--initial-branch=main"]);
    git(upstream, ["remote", "add", "origin", `file://${origin}`]);
    git(upstream, ["push", "--quiet", "-u", "origin", "main"]);
    const clone = join(work, "clone");
    git(work, ["clone", "--quiet", `file://${origin}`, clone]);
    npm(clone, ["ci", "--prefer-offline"]);
    const packages = readdirSync(join(clone, "node_modules")).filter((n) => !n.startsWith(".")).length;

    const key = {
      repository: { identity: "example.test/bench/warm-fixture" },
      backendKind: "local",
      baseImage: "node-20",
      canonicalRef: "main",
    };
    const [publishMs, baseline] = await timed(() =>
      captureAndPublish(localCatalog(catalog.db, scope), {
        dir: clone,
        target: { kind: "baseline", key },
        dependencies: { paths: ["node_modules"] },
      }),
    );
    const deps = baseline.dependencies;
    if (deps?.outcome !== "published") throw new Error(`the dependencies were not cached: ${JSON.stringify(deps)}`);
    process.stdout.write(
      `baseline with ${packages} packages (${kib(fileBytes(join(clone, "node_modules")))}) published in ${ms(publishMs)} ms; ` +
        `the cache stored ${kib(deps.uploaded.bytes)} in ${deps.uploaded.blobs} blobs\n`,
    );

    const acquire = {
      repository: key.repository,
      backendKind: key.backendKind,
      baseImage: key.baseImage,
      canonicalRef: "main",
    };
    const start = (into: string, dependencies: boolean) =>
      acquireAndRestore(localRestorePort(catalog.db, scope), { acquire, into, host: "bench", stateDir, dependencies });
    const naive: number[] = [];
    const warm: number[] = [];
    const checkoutOnly: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      execFileSync("sync");
      const a = join(work, `naive-${round}`);
      const [naiveMs] = await timed(async () => {
        const [restoreMs] = await timed(() => start(a, false));
        checkoutOnly.push(restoreMs);
        npm(a, ["ci", "--prefer-offline"]);
      });
      naive.push(naiveMs);

      execFileSync("sync");
      const b = join(work, `warm-${round}`);
      const [warmMs, done] = await timed(() => start(b, true));
      const added = done.steps.at(-1)?.dependencies;
      if (added?.status !== "restored") throw new Error(`round ${round}: dependencies ${JSON.stringify(added)}`);
      warm.push(warmMs);
      for (const dir of [a, b]) execFileSync("node", ["-e", "require('./index.js')"], { cwd: dir });
      process.stdout.write(
        `round ${round}: restore + npm ci ${ms(naiveMs)} ms (restore ${ms(checkoutOnly.at(-1)!)} ms), restore with the cache ${ms(warmMs)} ms\n`,
      );
      rmSync(a, { recursive: true, force: true });
      rmSync(b, { recursive: true, force: true });
    }

    process.stdout.write(
      `adding ${ADDED.name}@${ADDED.version}, publishing the next baseline with its dependencies …\n`,
    );
    npm(upstream, ["install", "--prefer-offline", "--package-lock-only", `${ADDED.name}@${ADDED.version}`]);
    git(upstream, ["commit", "--quiet", "-am", `add ${ADDED.name}`]);
    git(upstream, ["push", "--quiet", "origin", "main"]);
    git(clone, ["pull", "--quiet", "--ff-only"]);
    npm(clone, ["ci", "--prefer-offline"]);
    const addedBytes = fileBytes(join(clone, "node_modules", ADDED.name));
    const next = await captureAndPublish(localCatalog(catalog.db, scope), {
      dir: clone,
      target: { kind: "baseline", key },
      dependencies: { paths: ["node_modules"] },
    });
    if (next.dependencies?.outcome !== "published") throw new Error("the second cache was not published");
    const stored = next.dependencies.uploaded.bytes;

    const naiveMedian = median(naive);
    const warmMedian = median(warm);
    const depsAlone = (median(warm) - median(checkoutOnly)) / (naiveMedian - median(checkoutOnly));
    const wallRatio = warmMedian / naiveMedian;
    const bytesRatio = stored / addedBytes;
    process.stdout.write(`\nwarm start, ${DB} catalog, ${ROUNDS} rounds, load ${loadAverage()}\n`);
    process.stdout.write(
      [
        `  new task, baseline restored then npm ci --prefer-offline   median ${ms(naiveMedian)} ms (the restore alone ${ms(median(checkoutOnly))} ms)`,
        `  new task, baseline restored with its dependency cache      median ${ms(warmMedian)} ms   ${wallRatio.toFixed(2)}x (goal ≤ ${WALL_GOAL}x); the dependencies alone ${depsAlone.toFixed(2)}x`,
        `  next baseline's dependencies after adding ${ADDED.name}          stored ${kib(stored)} in ${next.dependencies.uploaded.blobs} blobs; ${ADDED.name} is ${kib(addedBytes)}: ${bytesRatio.toFixed(2)}x (goal ≤ ${BYTES_GOAL}x)`,
        "",
      ].join("\n"),
    );
    process.stdout.write(
      wallRatio <= WALL_GOAL
        ? `goal met: wall ${wallRatio.toFixed(2)}x\n`
        : `goal MISSED: wall ${wallRatio.toFixed(2)}x > ${WALL_GOAL}x\n`,
    );
    process.stdout.write(
      bytesRatio <= BYTES_GOAL
        ? `goal met: stored ${bytesRatio.toFixed(2)}x\n`
        : `goal MISSED: stored ${bytesRatio.toFixed(2)}x > ${BYTES_GOAL}x\n`,
    );
  } finally {
    await catalog.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
