// Runs before degraded.spec.ts (the files run in name order against one seeded app): that spec
// discards the spike's degraded restore and releases its pin, which this one reads as seeded.
import type { Locator, Page } from "@playwright/test";
import { callTrpc, expect, test } from "./fixtures.ts";
import { signIn } from "./users.ts";

const SIZES = [
  { name: "desktop", viewport: { width: 1440, height: 900 } },
  { name: "phone", viewport: { width: 390, height: 844 } },
] as const;

async function openGraph(page: Page, repository: string) {
  await page.goto("/repositories");
  await page.getByRole("link", { name: repository, exact: true }).click();
  await expect(page.getByRole("heading", { level: 1, name: repository })).toBeVisible({ timeout: 20_000 });
  const graph = page.getByTestId("lineage-graph");
  await expect(graph.locator(".react-flow__node").first()).toBeVisible();
  return graph;
}

/** Selects a node as a keyboard user does (it may be outside the part of the canvas on screen). */
async function choose(page: Page, node: Locator) {
  await node.focus();
  await page.keyboard.press("Enter");
}

/** The node's own box (the .gnode inside React Flow's wrapper). */
function gnode(node: Locator): Locator {
  return node.locator(".gnode");
}

async function repositoryIdOf(page: Page): Promise<string> {
  return decodeURIComponent(new URL(page.url()).pathname.split("/").pop()!);
}

for (const size of SIZES) {
  test.describe(`lineage graph (${size.name})`, () => {
    test.use({ viewport: size.viewport });
    // Long flows of many steps; the machines the suite runs on are often busy.
    test.describe.configure({ timeout: 180_000 });

    test("an operator finds the current baseline of each key, the pinned and degraded checkpoints and the retired-but-held one from the graph alone", async ({
      page,
    }) => {
      await signIn(page, "operator");
      const graph = await openGraph(page, "web-app");
      const detail = page.getByRole("complementary", { name: "Selected node" });

      // Two agents publish baselines of main: the graph says which one each agent's new task gets.
      const current = page.getByRole("region", { name: "Current baseline per key" });
      await expect(current.getByRole("button")).toHaveCount(2);
      await current.getByRole("button", { name: /^claude-runner-1 · main →/ }).click();
      await expect(detail).toContainText("yes: a new task for this agent and ref starts from it");
      const currentNodes = graph.getByRole("button", {
        name: /^baseline main @ \w+, ready, current baseline of its key/,
      });
      await expect(currentNodes).toHaveCount(2);
      // Superseded baselines carry no such badge.
      const older = graph.getByRole("button", { name: /^baseline main @ \w+, superseded/ });
      expect(await older.count()).toBeGreaterThan(0);
      for (const name of await older.evaluateAll((els) => els.map((e) => e.getAttribute("aria-label")))) {
        expect(name).not.toContain("current");
      }
      await expect(page).toHaveURL(/[?&]node=/);

      // The spike's head came back degraded on another host and is still held by its pin.
      const spike = graph.getByRole("button", { name: /^checkpoint spike-redis-cache #2, ready, .*pinned.*degraded/ });
      await expect(spike).toHaveCount(1);
      await expect(spike.locator(".graph-badge-degraded")).toHaveText("degraded");
      await expect(spike.locator(".graph-badge-pinned")).toBeVisible();
      // It does not look like a plain ready checkpoint.
      const plain = graph.getByRole("button", { name: /^checkpoint issue-412-login-timeout #3, ready$/ });
      await expect(plain).toHaveCount(1);
      const look = (l: Locator) =>
        gnode(l).evaluate((e) => {
          const s = getComputedStyle(e);
          return { border: s.borderTopStyle, background: s.backgroundColor };
        });
      const [spikeLook, plainLook] = [await look(spike), await look(plain)];
      expect(spikeLook.border).toBe("dashed");
      expect(plainLook.border).toBe("solid");
      expect(spikeLook.background).not.toBe(plainLook.background);
      await choose(page, spike);
      await expect(detail.getByRole("heading", { name: "spike-redis-cache #2" })).toBeVisible();
      await expect(detail).toContainText("Degraded restores1");
      await page.screenshot({ path: `e2e/screenshots/graph-badges-${size.name}.png`, fullPage: true });

      // The legend explains every badge and node kind, the dashed and hatched ones included.
      const legend = page.locator(".graph-legend");
      for (const text of [
        "current",
        "pinned",
        "degraded",
        "last restored",
        "retired · held",
        "forked work context, no checkpoint yet (dashed)",
        "folded run of a chain (hatched; select to expand)",
      ]) {
        await expect(legend).toContainText(text);
      }

      // payments-api: the refunds head was retired by an operator, but a support case still holds it.
      const pay = await openGraph(page, "payments-api");
      const held = pay.getByRole("button", {
        name: /^checkpoint issue-77-partial-refunds #3, retired, .*retired · held/,
      });
      await expect(held).toHaveCount(1);
      await expect(held.locator(".graph-badge-retired-held")).toBeVisible();
      await choose(page, held);
      await expect(detail).toContainText("Active pins1");
      await page.screenshot({ path: `e2e/screenshots/graph-retired-held-${size.name}.png`, fullPage: true });
    });

    test("search jumps to a folded checkpoint, the selection stays centred when its chain expands, and the view is in the URL", async ({
      page,
    }) => {
      await signIn(page, "operator");
      const graph = await openGraph(page, "web-app");
      const detail = page.getByRole("complementary", { name: "Selected node" });
      const repositoryId = await repositoryIdOf(page);
      // The flaky-test chain is folded; #7 is inside the fold.
      await expect(graph.getByRole("button", { name: /folded checkpoints of issue-501-flaky-e2e/ })).toHaveCount(1);
      await expect(graph.getByRole("button", { name: /^checkpoint issue-501-flaky-e2e #7,/ })).toHaveCount(0);
      const hits = await callTrpc(
        page,
        "dashboard.graphSearch",
        { repositoryId, text: "issue-501-flaky-e2e", limit: 50 },
        "query",
      );
      const seventh = (hits.result as { id: string; label: string }[]).find(
        (h) => h.label === "issue-501-flaky-e2e #7",
      )!;

      // Jump by snapshot id: one hit; choosing it draws #7 on its own and selects it.
      await page.getByLabel("Find a snapshot").fill(seventh.id.slice(0, 10));
      await page.getByRole("button", { name: "Find", exact: true }).click();
      const results = page.getByRole("list", { name: "Search results" });
      await expect(results.getByRole("button")).toHaveCount(1);
      await results.getByRole("button", { name: /issue-501-flaky-e2e #7/ }).click();
      const seventhNode = graph.getByRole("button", { name: /^checkpoint issue-501-flaky-e2e #7,/ });
      await expect(seventhNode).toHaveCount(1);
      await expect(detail.getByRole("heading", { name: "issue-501-flaky-e2e #7" })).toBeVisible();
      await expect(gnode(seventhNode)).toHaveClass(/selected/);
      // The jump brings the graph, and the node in it, on screen (on a phone the canvas is below the filters).
      await expect(seventhNode).toBeInViewport();
      // The rest of the chain stays folded, on both sides of it.
      await expect(graph.getByRole("button", { name: /folded checkpoints of issue-501-flaky-e2e/ })).toHaveCount(2);
      // Search by branch and by work context finds it too.
      await page.getByLabel("Find a snapshot").fill("fix/flaky");
      await page.getByRole("button", { name: "Find", exact: true }).click();
      await expect(results.getByRole("button").first()).toContainText("issue-501-flaky-e2e #16");
      await page.screenshot({ path: `e2e/screenshots/graph-search-${size.name}.png`, fullPage: true });
      await results.getByRole("button", { name: /issue-501-flaky-e2e #16/ }).click();
      await expect(detail.getByRole("heading", { name: "issue-501-flaky-e2e #16" })).toBeVisible();

      // Expanding the chain from a folded group: its first member is selected and centred.
      await choose(page, graph.getByRole("button", { name: /folded checkpoints of issue-501-flaky-e2e/ }).first());
      await detail.getByRole("button", { name: "Expand this chain" }).click();
      await expect(graph.getByRole("button", { name: /folded checkpoints of issue-501-flaky-e2e/ })).toHaveCount(0);
      const selected = graph.locator(".gnode.selected");
      await expect(selected).toHaveCount(1);
      await expect(selected).toBeInViewport();
      const canvas = (await graph.boundingBox())!;
      await expect
        .poll(async () => {
          const box = (await selected.boundingBox())!;
          return Math.abs(box.x + box.width / 2 - (canvas.x + canvas.width / 2));
        })
        .toBeLessThan(40);

      // Filters are in the URL: a reload (or a shared link) shows the same view.
      await page.getByLabel("Work context").selectOption("issue-412-login-timeout");
      await page.getByRole("checkbox", { name: "ready" }).check();
      await expect(page).toHaveURL(/workContext=issue-412-login-timeout/);
      await expect(page).toHaveURL(/states=ready/);
      const summary = page.getByTestId("graph-summary");
      await expect(summary).toContainText("1 of");
      // The other states fold into grey groups, so the ready head is still joined to where it began.
      await expect(graph.locator(".gnode.group.filtered-out").first()).toBeVisible();
      const head = graph.getByRole("button", { name: /^checkpoint issue-412-login-timeout #3, ready/ });
      await expect(head).toHaveCount(1);
      const headId = await head.getAttribute("data-id");
      expect(await graph.locator(`.react-flow__edge[data-id$="->${headId}"]`).count()).toBeGreaterThan(0);
      await page.reload();
      await expect(page.getByLabel("Work context")).toHaveValue("issue-412-login-timeout");
      await expect(page.getByRole("checkbox", { name: "ready" })).toBeChecked();
      await expect(summary).toContainText("1 of");
      await page.getByRole("button", { name: "Clear filters" }).click();
      await expect(page).not.toHaveURL(/states=/);
    });

    test("focus mode shows one node's ancestors and descendants only", async ({ page }) => {
      await signIn(page, "operator");
      const graph = await openGraph(page, "web-app");
      const detail = page.getByRole("complementary", { name: "Selected node" });
      const all = Number(await graph.getAttribute("data-view-nodes"));
      await choose(page, graph.getByRole("button", { name: /^checkpoint issue-412-login-timeout #2,/ }));
      await detail.getByRole("button", { name: "Focus: ancestors and descendants" }).click();
      await expect(page).toHaveURL(/focus=/);
      await expect(
        page.getByRole("status").filter({ hasText: "Focus: only the ancestors and descendants" }),
      ).toBeVisible();
      // main-1 seeded #1 → #2 → #3; nothing of the other work contexts.
      await expect(graph.locator(".react-flow__node")).toHaveCount(4);
      await expect(graph.getByRole("button", { name: /^checkpoint issue-412-login-timeout #1,/ })).toHaveCount(1);
      await expect(graph.getByRole("button", { name: /^checkpoint issue-412-login-timeout #3,/ })).toHaveCount(1);
      await expect(graph.getByRole("button", { name: /^baseline main @ \w+, superseded/ })).toHaveCount(1);
      await expect(graph.getByRole("button", { name: /spike-redis-cache/ })).toHaveCount(0);
      // One click to compare it with its predecessor.
      await expect(detail.getByRole("link", { name: "Diff with predecessor" })).toHaveAttribute(
        "href",
        /^\/diff\?from=[\w-]+&to=[\w-]+$/,
      );
      await page.screenshot({ path: `e2e/screenshots/graph-focus-${size.name}.png`, fullPage: true });
      await page.getByRole("button", { name: "Show the whole graph" }).click();
      await expect(graph).toHaveAttribute("data-view-nodes", String(all));
    });
  });
}

test("the graph works from the keyboard: one Tab stop per node, arrows move between nodes, Enter selects, +/- zoom, arrows pan", async ({
  page,
}) => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await signIn(page, "operator");
  const graph = await openGraph(page, "web-app");
  const detail = page.getByRole("complementary", { name: "Selected node" });
  const viewport = graph.locator(".react-flow__viewport");
  const transform = async () =>
    viewport.evaluate((e) => {
      const m = new DOMMatrix(getComputedStyle(e).transform);
      return { x: m.e, y: m.f, zoom: m.a };
    });
  const focusedNodeId = () =>
    page.evaluate(
      () =>
        (document.activeElement as HTMLElement | null)?.closest(".react-flow__node")?.getAttribute("data-id") ?? null,
    );

  // The graph itself is a Tab stop (arrows pan there); each node is exactly one more.
  const canvas = graph.getByRole("group", { name: /^Lineage graph/ });
  await canvas.focus();
  const before = await transform();
  expect(before.zoom).toBeCloseTo(1, 1);
  await page.keyboard.press("ArrowLeft");
  await expect.poll(async () => (await transform()).x).toBeGreaterThan(before.x);
  await page.keyboard.press("+");
  await expect.poll(async () => (await transform()).zoom).toBeGreaterThan(before.zoom);
  await page.keyboard.press("-");
  await expect.poll(async () => (await transform()).zoom).toBeCloseTo(before.zoom, 1);

  const visited: string[] = [];
  for (let i = 0; i < 3; i += 1) {
    await page.keyboard.press("Tab");
    const id = await focusedNodeId();
    expect(id, "Tab lands on a node").not.toBeNull();
    // The element with the focus is the node itself: nothing inside it takes a Tab stop.
    expect(await page.evaluate(() => document.activeElement?.classList.contains("react-flow__node"))).toBe(true);
    visited.push(id!);
  }
  expect(new Set(visited).size).toBe(3);
  expect(
    await graph.locator(".react-flow__node button, .react-flow__node a, .react-flow__node [tabindex]").count(),
  ).toBe(0);

  // Arrows move to the nearest node in that direction.
  const start = await focusedNodeId();
  const xOf = (id: string) =>
    graph.locator(`.react-flow__node[data-id="${id}"]`).evaluate((e) => e.getBoundingClientRect().x);
  await page.keyboard.press("ArrowRight");
  await expect.poll(focusedNodeId).not.toBe(start);
  const right = (await focusedNodeId())!;
  expect(await xOf(right)).toBeGreaterThan(await xOf(start!));
  await page.keyboard.press("ArrowLeft");
  await expect.poll(focusedNodeId).not.toBe(right);

  // Enter opens the focused node's detail.
  await page.keyboard.press("Enter");
  const label = await page.evaluate(() => document.activeElement?.getAttribute("aria-label") ?? "");
  const title = label.replace(/^(baseline|checkpoint|forked work context) /, "").split(",")[0]!;
  await expect(detail.getByRole("heading", { name: title })).toBeVisible();
  await page.screenshot({ path: "e2e/screenshots/graph-keyboard.png" });
});

test("the untimed layout is one toggle away and kept in the URL", async ({ page }) => {
  await signIn(page, "operator");
  const graph = await openGraph(page, "web-app");
  await expect(graph).toHaveAttribute("data-layout", "lanes");
  // Lanes: one band per agent, labelled.
  await expect(graph.locator(".graph-band-label", { hasText: "claude-runner-1" })).toHaveCount(1);
  await expect(graph.locator(".graph-band-label", { hasText: "codex-batch" })).toHaveCount(1);
  await page.getByRole("button", { name: "Untimed layout" }).click();
  await expect(page).toHaveURL(/layout=dag/);
  await expect(graph).toHaveAttribute("data-layout", "dag");
  await expect(graph.locator(".graph-band-label")).toHaveCount(0);
  await page.reload();
  await expect(graph).toHaveAttribute("data-layout", "dag");
  // Edge labels are drawn whole, at a readable size.
  const label = graph.locator(".react-flow__edge-text", { hasText: "superseded by" }).first();
  await expect(label).toHaveText("superseded by");
  expect(await label.evaluate((e) => parseFloat(getComputedStyle(e).fontSize))).toBeGreaterThanOrEqual(11);
});

test("the default zoom keeps every node's text at 11 px or more", async ({ page }) => {
  await signIn(page, "operator");
  const graph = await openGraph(page, "web-app");
  const sizes = await graph.locator(".gnode span").evaluateAll((els) =>
    els
      .filter((e) => e.getBoundingClientRect().width > 0)
      .map((e) => {
        const zoom = new DOMMatrix(getComputedStyle(e.closest(".react-flow__viewport")!).transform).a;
        return parseFloat(getComputedStyle(e).fontSize) * zoom;
      }),
  );
  expect(sizes.length).toBeGreaterThan(0);
  expect(Math.min(...sizes)).toBeGreaterThanOrEqual(11);
  // A minimap shows where the view is in the whole history.
  await expect(graph.getByRole("img", { name: "Minimap of the whole graph" })).toBeVisible();
});

test("an operator opens a snapshot from the graph's detail", async ({ page }) => {
  await signIn(page, "operator");
  const graph = await openGraph(page, "web-app");
  await choose(page, graph.getByRole("button", { name: /^checkpoint issue-412-login-timeout #2,/ }));
  await page.getByRole("complementary", { name: "Selected node" }).getByRole("link", { name: "Open snapshot" }).click();
  await expect(page.getByRole("heading", { level: 1, name: /^Checkpoint/ })).toBeVisible();
  await expect(page.getByRole("main")).toContainText("work context issue-412-login-timeout, checkpoint #2");
  for (const section of [
    "Key",
    "State history",
    "Manifest",
    "Heads and the layer forest beneath them",
    "Pins",
    "Restores it seeded",
  ]) {
    await expect(page.getByRole("heading", { level: 2, name: section, exact: true })).toBeVisible();
  }
  const manifest = page.getByRole("region", { name: "Manifest" });
  await expect(manifest).toContainText("fix/login-timeout");
  await expect(manifest.getByRole("heading", { name: "Patch chain" })).toBeVisible();
  await expect(manifest).toContainText("denied");
  const forest = page.getByRole("region", { name: "Heads and the layer forest beneath them" });
  await expect(forest.locator(".badge.head")).toHaveCount(2);
  await page.screenshot({ path: "e2e/screenshots/snapshot-detail.png", fullPage: true });
});

test("a baseline's page shows its validation evidence and the restores it seeded", async ({ page }) => {
  await signIn(page, "support");
  await page.goto("/snapshots");
  await page.getByRole("checkbox", { name: "Show retired and deleted snapshots" }).check();
  const row = page.getByRole("row", { name: /baseline .* refs\/heads\/main/ }).last();
  await row.getByRole("link").first().click();
  await expect(page.getByRole("heading", { level: 1, name: /^Baseline/ })).toBeVisible();
  const evidence = page.getByRole("region", { name: "Baseline validation evidence" });
  await expect(evidence).toContainText("remoteTrackingRef");
  await expect(evidence).toContainText("refs/remotes/origin/main");
  await expect(page.getByRole("region", { name: "Restores it seeded" })).toContainText("restored");
  // Support browses but does not retire: no retirement controls.
  await expect(page.getByRole("button", { name: /Retire/ })).toHaveCount(0);
  await page.screenshot({ path: "e2e/screenshots/baseline-detail.png", fullPage: true });
});

for (const scheme of ["light", "dark"] as const) {
  test(`each edge's line and arrowhead are its kind's colour in the ${scheme} theme`, async ({ page }) => {
    await page.emulateMedia({ colorScheme: scheme });
    await signIn(page, "operator");
    const graph = await openGraph(page, "web-app");
    await expect(graph.locator(".react-flow__edge.edge-seeded")).not.toHaveCount(0);
    const seen = await page.evaluate(() => {
      // The theme's colour of a variable, as the browser resolves it.
      const probe = document.createElement("div");
      document.body.append(probe);
      const resolve = (variable: string) => {
        probe.style.color = `var(${variable})`;
        return getComputedStyle(probe).color;
      };
      const expected = { chain: resolve("--edge-chain"), seeded: resolve("--edge-seeded") };
      probe.remove();
      const drawn = (kind: string) => {
        const path = document.querySelector<SVGPathElement>(`.react-flow__edge.edge-${kind} .react-flow__edge-path`)!;
        const marker = path.getAttribute("marker-end")!.match(/#([^']+)/)![1]!;
        const arrow = document.getElementById(marker)!.querySelector("polyline")!;
        return { line: getComputedStyle(path).stroke, arrowhead: getComputedStyle(arrow).fill };
      };
      return { expected, chain: drawn("chain"), seeded: drawn("seeded") };
    });
    expect(seen.expected.chain).not.toBe(seen.expected.seeded);
    expect(seen.chain).toEqual({ line: seen.expected.chain, arrowhead: seen.expected.chain });
    expect(seen.seeded).toEqual({ line: seen.expected.seeded, arrowhead: seen.expected.seeded });
  });
}
