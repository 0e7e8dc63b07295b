// `npm run bench:ui`: how quickly a large repository's lineage graph renders in Chromium, at
// 5,000 and 50,000 snapshots. For each size: seeds a fresh catalog through the services, starts
// the app on its own port and data directory, signs in, opens the graph page several times and
// reads the page's own performance marks (strata:graph-data, strata:graph-rendered; ms since
// navigation start), measures the graph answer gzipped, and times "Expand every chain".
// Options: --snapshots 5000,50000 --runs 5 --port 3230 --keep (keep each size's catalog) --reuse
// (use a kept catalog of that size instead of seeding). Prints each goal, the measured value and
// met/missed.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance as clock } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { chromium } from "@playwright/test";
import { openCatalog } from "../server/db/client.ts";
import { migrate } from "../server/db/migrate.ts";
import { createUser } from "../server/auth/dashboard-auth.ts";
import { seedLargeRepository } from "./dashboard-seed.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  options: {
    snapshots: { type: "string", default: "5000,50000" },
    runs: { type: "string", default: "5" },
    port: { type: "string", default: "3230" },
    /** Use the catalog a previous --keep run kept for a size instead of seeding a new one. */
    reuse: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
});
const SIZES = values.snapshots.split(",").map((v) => Number(v.trim()));
const RUNS = Number(values.runs);
const PORT = Number(values.port);
const PASSWORD = "bench-ui-password-not-secret";
const BASE = `http://127.0.0.1:${PORT}`;
const JSON_GOAL_BYTES = 500 * 1024;

/** The issue's goals: first render by size, "expand every chain" at 5,000, the answer's size at 50,000. */
function goalsFor(snapshots: number) {
  return {
    firstRenderMs: snapshots <= 5000 ? 1500 : 2500,
    expandMs: snapshots <= 5000 ? 1500 : null,
    gzipBytes: snapshots >= 50_000 ? JSON_GOAL_BYTES : null,
  };
}

/** Each size's own data directory, outside the checkout: kept (--keep) and found again (--reuse) by size. */
function dataDirFor(snapshots: number): string {
  return values.keep || values.reuse
    ? path.join(os.tmpdir(), `strata-bench-ui-${snapshots}`)
    : path.join(os.tmpdir(), `strata-bench-ui-${process.pid}-${snapshots}`);
}

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

const REPOSITORY = "github.com/acme/monorepo";

/** A fresh catalog with the bench user and a `snapshots`-snapshot repository; returns its id. */
async function seedCatalog(dataDir: string, databaseUrl: string, snapshots: number): Promise<string> {
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  await migrate(databaseUrl);
  const catalog = openCatalog(databaseUrl);
  try {
    await createUser(catalog.db, { email: "bench@strata.test", role: "operator", password: PASSWORD });
    const t0 = clock.now();
    const seeded = await seedLargeRepository(catalog.db, {
      snapshots,
      identity: REPOSITORY,
      onProgress: (done) => {
        if (done % 1000 < 41) process.stdout.write(`\r  seeding… ${done}/${snapshots}`);
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

interface Figures {
  snapshots: number;
  firstRenderMs: number;
  expandMs: number | null;
  gzipBytes: number;
  rawBytes: number;
  viewNodes: number;
}

async function benchSize(snapshots: number): Promise<Figures> {
  const dataDir = dataDirFor(snapshots);
  const databaseUrl = `file:${path.join(dataDir, "strata.db")}`;
  const reuse = values.reuse && existsSync(path.join(dataDir, "strata.db"));
  log(`\n== ${snapshots} snapshots ${reuse ? `(kept catalog ${dataDir})` : ""}`);
  const repositoryId = reuse ? await repositoryIdOf(databaseUrl) : await seedCatalog(dataDir, databaseUrl, snapshots);
  const goals = goalsFor(snapshots);

  // `strata serve` migrates (already done) and builds the app first if its sources changed.
  // No worker in the app: nothing else competes for the CPU while the page is timed.
  const server = spawn(process.execPath, ["cli/strata.mjs", "serve", "--no-worker"], {
    env: {
      ...process.env,
      STRATA_DATA_DIR: dataDir,
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
      graphUrl: string;
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
        const fetch = performance.getEntriesByType("resource").find((e) => e.name.includes("dashboard.graph?")) as
          PerformanceResourceTiming | undefined;
        return {
          html: nav?.responseEnd ?? NaN,
          scripts: nav?.domContentLoadedEventEnd ?? NaN,
          requestStart: fetch?.startTime ?? NaN,
          responseStart: fetch?.responseStart ?? NaN,
          responseEnd: fetch?.responseEnd ?? NaN,
          bytes: fetch?.encodedBodySize ?? 0,
          graphUrl: fetch?.name ?? "",
          data: data?.startTime ?? NaN,
          rendered: rendered?.startTime ?? NaN,
          layout: detail.layoutMs ?? NaN,
          viewNodes: detail.nodes ?? 0,
          drawn: document.querySelectorAll(".react-flow__node").length,
          graphNodes: Number(document.querySelector("[data-graph-nodes]")?.getAttribute("data-graph-nodes") ?? 0),
        };
      });
      if (marks.graphNodes !== snapshots)
        throw new Error(`the page shows ${marks.graphNodes} snapshots, not ${snapshots}`);
      if (marks.drawn === 0) throw new Error("no graph node was drawn");
      if (i > 0) results.push(marks);
      log(
        `${i === 0 ? "warm-up" : `run ${i}`}: html ${marks.html.toFixed(0)} · scripts ${marks.scripts.toFixed(0)} · ` +
          `graph request ${marks.requestStart.toFixed(0)}→${marks.responseEnd.toFixed(0)} (${(marks.bytes / 1024).toFixed(0)} KiB) · ` +
          `data ${marks.data.toFixed(0)} · first render ${marks.rendered.toFixed(0)} ms ` +
          `(layout ${marks.layout.toFixed(0)} ms, ${marks.viewNodes} nodes after folding, ${marks.drawn} drawn)`,
      );
    }
    // The graph answer as the server sends it, gzipped as a compressing proxy would.
    const answer = await page.request.get(results[0]!.graphUrl);
    const body = await answer.body();
    const gzipBytes = gzipSync(body).length;

    // Expanding every chain: the whole graph fetched, laid out and drawn.
    let expandMs: number | null = null;
    if (goals.expandMs !== null) {
      const clickedAt = await page.evaluate(() => performance.now());
      await page.getByRole("button", { name: "Expand every chain" }).click();
      const drawn = await page.waitForFunction(
        (n) => {
          const mark = performance
            .getEntriesByName("strata:graph-drawn")
            .map((m) => m as PerformanceMark)
            .find((m) => ((m.detail as { nodes?: number } | null)?.nodes ?? 0) >= n);
          return mark ? { at: mark.startTime, detail: mark.detail as { nodes: number; drawn?: number } } : null;
        },
        snapshots,
        { timeout: 120_000 },
      );
      const { at, detail } = (await drawn.jsonValue())!;
      expandMs = at - clickedAt;
      // React Flow is given the nodes inside the viewport and a margin (components/graph-viewport.ts).
      const drawnNodes = await page.locator(".react-flow__node").count();
      if (drawnNodes === 0) throw new Error("no graph node was drawn after expanding every chain");
      log(
        `expand every chain: ${expandMs.toFixed(0)} ms (${detail.nodes} nodes laid out, ${detail.drawn ?? detail.nodes} given to React Flow, ` +
          `${drawnNodes} drawn)`,
      );
      // Only the part around the viewport is drawn: the arrow keys still walk the whole graph (a
      // node off screen is drawn, then focused).
      const focused = () =>
        page.evaluate(() => document.activeElement?.closest(".react-flow__node")?.getAttribute("data-id") ?? null);
      await page.locator(".react-flow__node").first().focus();
      const seen = new Set([await focused()]);
      for (let step = 0; step < 12; step += 1) {
        await page.keyboard.press("ArrowLeft");
        await page.waitForFunction(
          (before) => {
            const id = document.activeElement?.closest(".react-flow__node")?.getAttribute("data-id");
            return id && !before.includes(id);
          },
          [...seen] as string[],
        );
        seen.add(await focused());
      }
      log(
        `arrow keys: 12 steps left along the expanded graph, each focusing another node (drawn when it was off screen)`,
      );
    }

    const firstRender = median(results.map((r) => r.rendered));
    const m = (key: "html" | "scripts" | "requestStart" | "responseEnd" | "responseStart" | "data") =>
      median(results.map((r) => r[key])).toFixed(0);
    log("");
    log(`bench:ui — ${snapshots}-snapshot repository graph, Chromium 1440x900, ${RUNS} runs (median)`);
    log(`  page HTML received:   ${m("html")} ms after navigation start; scripts ready ${m("scripts")} ms`);
    log(
      `  graph request:        ${m("requestStart")} → ${m("responseEnd")} ms (first byte ${m("responseStart")} ms, ` +
        `${(body.length / 1024).toFixed(0)} KiB JSON, ${(gzipBytes / 1024).toFixed(0)} KiB gzipped)`,
    );
    log(`  data received:        ${m("data")} ms after navigation start`);
    log(
      `  layout:               ${median(results.map((r) => r.layout)).toFixed(0)} ms (${results[0]?.viewNodes} nodes after server-side folding)`,
    );
    if (errors.length > 0) log(`  console errors: ${errors.join(" | ")}`);
    await context.close();
    return {
      snapshots,
      firstRenderMs: firstRender,
      expandMs,
      gzipBytes,
      rawBytes: body.length,
      viewNodes: results[0]?.viewNodes ?? 0,
    };
  } finally {
    await browser.close();
    if (server.exitCode === null) {
      server.kill("SIGTERM");
      await new Promise((r) => server.once("exit", r));
    }
    if (values.keep || values.reuse) log(`kept the catalog for --reuse: ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
}

function verdict(measured: number, goal: number): string {
  return measured <= goal ? "met" : "MISSED";
}

async function main() {
  const figures: Figures[] = [];
  for (const size of SIZES) figures.push(await benchSize(size));
  log("\nbench:ui — goals (issue 18) and measured values");
  for (const f of figures) {
    const goals = goalsFor(f.snapshots);
    log(`  ${f.snapshots} snapshots (${f.viewNodes} nodes after folding):`);
    log(
      `    first render:        ${f.firstRenderMs.toFixed(0)} ms   goal <= ${goals.firstRenderMs} ms   ${verdict(f.firstRenderMs, goals.firstRenderMs)}`,
    );
    if (goals.expandMs !== null && f.expandMs !== null)
      log(
        `    expand every chain:  ${f.expandMs.toFixed(0)} ms   goal <= ${goals.expandMs} ms   ${verdict(f.expandMs, goals.expandMs)}`,
      );
    else log(`    expand every chain:  not timed (the goal is set at 5,000)`);
    const kib = (b: number) => `${(b / 1024).toFixed(0)} KiB`;
    if (goals.gzipBytes !== null)
      log(
        `    graph JSON gzipped:  ${kib(f.gzipBytes)}   goal <= ${kib(goals.gzipBytes)}   ${verdict(f.gzipBytes, goals.gzipBytes)}`,
      );
    else log(`    graph JSON gzipped:  ${kib(f.gzipBytes)} (${kib(f.rawBytes)} raw; the goal is set at 50,000)`);
  }
}

await main();
