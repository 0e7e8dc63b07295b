// `npm run bench:ui`: how long a 5,000-snapshot repository's lineage graph takes to first
// render in Chromium. Seeds a fresh catalog through the services, starts the app on its own
// port and data directory, signs in, opens the graph page several times and reads the page's
// own performance marks (strata:graph-data, strata:graph-rendered; ms since navigation start).
// Options: --snapshots 5000 --runs 5 --port 3230. Goal: first render <= 1500 ms.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance as clock } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { chromium } from "@playwright/test";
import { openCatalog } from "../server/db/client.ts";
import { migrate } from "../server/db/migrate.ts";
import { createUser } from "../server/auth/dashboard-auth.ts";
import { seedLargeRepository } from "./dashboard-seed.ts";

const { values } = parseArgs({
  options: {
    snapshots: { type: "string", default: "5000" },
    runs: { type: "string", default: "5" },
    port: { type: "string", default: "3230" },
    /** Reuse a catalog a previous run kept (--keep) instead of seeding a new one. */
    reuse: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const SNAPSHOTS = Number(values.snapshots);
const RUNS = Number(values.runs);
const PORT = Number(values.port);
const GOAL_MS = 1500;
// Its own data directory, outside the checkout, removed afterwards unless --keep.
const DATA_DIR = values.reuse ? path.resolve(values.reuse) : path.join(os.tmpdir(), `strata-bench-ui-${process.pid}`);
const PASSWORD = "bench-ui-password-not-secret";
const BASE = `http://127.0.0.1:${PORT}`;

function log(line: string) {
  process.stdout.write(`${line}\n`);
}

async function waitForHealth(server: ChildProcess, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`the app exited with code ${server.exitCode}`);
    try {
      if ((await fetch(`${BASE}/api/trpc/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error("the app did not answer within the time limit");
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const REPOSITORY = "github.com/acme/monorepo";

/** A fresh catalog with the bench user and a SNAPSHOTS-snapshot repository; returns its id. */
async function seedCatalog(databaseUrl: string): Promise<string> {
  rmSync(DATA_DIR, { recursive: true, force: true });
  mkdirSync(DATA_DIR, { recursive: true });
  await migrate(databaseUrl);
  const catalog = openCatalog(databaseUrl);
  try {
    await createUser(catalog.db, { email: "bench@strata.test", role: "operator", password: PASSWORD });
    const t0 = clock.now();
    const seeded = await seedLargeRepository(catalog.db, {
      snapshots: SNAPSHOTS,
      identity: REPOSITORY,
      onProgress: (done) => {
        if (done % 1000 < 41) process.stdout.write(`\r  seeding… ${done}/${SNAPSHOTS}`);
      },
    });
    log(`\rseeded ${seeded.snapshots} snapshots through the services in ${((clock.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await catalog.close();
  }
  return repositoryIdOf(databaseUrl);
}

async function repositoryIdOf(databaseUrl: string): Promise<string> {
  const catalog = openCatalog(databaseUrl);
  try {
    return (await catalog.db.repository.findUniqueOrThrow({ where: { identity: REPOSITORY } })).id;
  } finally {
    await catalog.close();
  }
}

async function main() {
  const databaseUrl = `file:${path.join(DATA_DIR, "strata.db")}`;
  const repositoryId = values.reuse ? await repositoryIdOf(databaseUrl) : await seedCatalog(databaseUrl);

  // `strata serve` migrates (already done) and builds the app first if its sources changed.
  // No worker in the app: nothing else competes for the CPU while the page is timed.
  const server = spawn(process.execPath, ["cli/strata.mjs", "serve", "--no-worker"], {
    env: {
      ...process.env,
      STRATA_DATA_DIR: DATA_DIR,
      DATABASE_URL: databaseUrl,
      PORT: String(PORT),
      STRATA_BIND: "127.0.0.1",
      STRATA_PUBLIC_URL: BASE,
      NEXT_TELEMETRY_DISABLED: "1",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  try {
    await waitForHealth(server, 240_000);
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    await page.goto(`${BASE}/signin`);
    await page.getByLabel("Email").fill("bench@strata.test");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/repositories$/);

    const url = `${BASE}/repositories/${repositoryId}`;
    const results: {
      html: number;
      scripts: number;
      requestStart: number;
      responseStart: number;
      responseEnd: number;
      bytes: number;
      data: number;
      rendered: number;
      layout: number;
      viewNodes: number;
    }[] = [];
    // One warm-up load (server and browser caches), then the measured ones.
    for (let i = 0; i <= RUNS; i += 1) {
      await page.goto(url);
      await page.waitForFunction(() => performance.getEntriesByName("strata:graph-rendered").length > 0, null, {
        timeout: 60_000,
      });
      const marks = await page.evaluate(() => {
        const data = performance.getEntriesByName("strata:graph-data")[0] as PerformanceMark | undefined;
        const rendered = performance.getEntriesByName("strata:graph-rendered")[0] as PerformanceMark | undefined;
        const detail = (rendered?.detail ?? {}) as { layoutMs?: number; nodes?: number };
        const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
        const fetch = performance.getEntriesByType("resource").find((e) => e.name.includes("dashboard.graph")) as
          PerformanceResourceTiming | undefined;
        return {
          html: nav?.responseEnd ?? NaN,
          scripts: nav?.domContentLoadedEventEnd ?? NaN,
          requestStart: fetch?.startTime ?? NaN,
          responseStart: fetch?.responseStart ?? NaN,
          responseEnd: fetch?.responseEnd ?? NaN,
          bytes: fetch?.encodedBodySize ?? 0,
          data: data?.startTime ?? NaN,
          rendered: rendered?.startTime ?? NaN,
          layout: detail.layoutMs ?? NaN,
          viewNodes: detail.nodes ?? 0,
          drawn: document.querySelectorAll(".react-flow__node").length,
          graphNodes: Number(document.querySelector("[data-graph-nodes]")?.getAttribute("data-graph-nodes") ?? 0),
        };
      });
      if (marks.graphNodes !== SNAPSHOTS)
        throw new Error(`the page shows ${marks.graphNodes} snapshots, not ${SNAPSHOTS}`);
      if (marks.drawn === 0) throw new Error("no graph node was drawn");
      if (i > 0) results.push(marks);
      log(
        `${i === 0 ? "warm-up" : `run ${i}`}: html ${marks.html.toFixed(0)} · scripts ${marks.scripts.toFixed(0)} · ` +
          `graph request ${marks.requestStart.toFixed(0)}→${marks.responseEnd.toFixed(0)} (${(marks.bytes / 1024).toFixed(0)} KiB) · ` +
          `data ${marks.data.toFixed(0)} · first render ${marks.rendered.toFixed(0)} ms ` +
          `(layout ${marks.layout.toFixed(0)} ms, ${marks.viewNodes} nodes after folding, ${marks.drawn} drawn)`,
      );
    }
    // Expanding every chain: the whole graph laid out and drawn.
    const clickedAt = await page.evaluate(() => performance.now());
    await page.getByRole("button", { name: "Expand every chain" }).click();
    const drawnAt = await page.waitForFunction(
      (n) =>
        performance
          .getEntriesByName("strata:graph-drawn")
          .map((m) => m as PerformanceMark)
          .find((m) => ((m.detail as { nodes?: number } | null)?.nodes ?? 0) >= n)?.startTime,
      SNAPSHOTS,
      { timeout: 120_000 },
    );
    const expandMs = ((await drawnAt.jsonValue()) as number) - clickedAt;

    const firstRender = median(results.map((r) => r.rendered));
    log("");
    log(`bench:ui — ${SNAPSHOTS}-snapshot repository graph, Chromium, ${RUNS} runs (median)`);
    const m = (key: keyof (typeof results)[number]) => median(results.map((r) => r[key])).toFixed(0);
    log(`  page HTML received:   ${m("html")} ms after navigation start; scripts ready ${m("scripts")} ms`);
    log(
      `  graph request:        ${m("requestStart")} → ${m("responseEnd")} ms (first byte ${m("responseStart")} ms, ${(results[0]!.bytes / 1024).toFixed(0)} KiB)`,
    );
    log(`  data received:        ${m("data")} ms after navigation start`);
    log(
      `  dagre layout:         ${median(results.map((r) => r.layout)).toFixed(0)} ms (${results[0]?.viewNodes} nodes after folding chains)`,
    );
    log(
      `  first render:         ${firstRender.toFixed(0)} ms after navigation start (goal <= ${GOAL_MS} ms: ${firstRender <= GOAL_MS ? "met" : "NOT met"})`,
    );
    log(`  expand every chain:   ${expandMs.toFixed(0)} ms to lay out and draw all ${SNAPSHOTS} nodes`);
    if (errors.length > 0) log(`  console errors: ${errors.join(" | ")}`);
    await context.close();
  } finally {
    await browser.close();
    if (server.exitCode === null) {
      server.kill("SIGTERM");
      await new Promise((r) => server.once("exit", r));
    }
    if (values.keep || values.reuse) log(`kept the catalog: --reuse ${DATA_DIR}`);
    else rmSync(DATA_DIR, { recursive: true, force: true });
  }
}

await main();
