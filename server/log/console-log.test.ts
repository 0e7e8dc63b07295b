// Console output of libraries in `strata serve` (Next.js's) becomes JSON log lines.
import { Writable } from "node:stream";
import { afterEach, expect, it } from "vitest";
import { consoleText, routeConsoleToLog } from "./console-log.ts";
import { configureLogging } from "./logger.ts";

let restore: (() => void) | null = null;
afterEach(() => restore?.());

it("sends console calls through the logger as one JSON line each, without colours or glyphs", async () => {
  const lines: string[] = [];
  await configureLogging({
    level: "info",
    destination: new Writable({ write: (c: Buffer, _e, done) => done(void lines.push(c.toString())) }),
  });
  restore = routeConsoleToLog("console");
  console.log("\u001b[32m✓\u001b[39m Running next.config.mjs took %dms", 80);
  console.error("⨯ Error: boom\n    at render (page.tsx:1:1)");
  console.debug("below the level");
  console.warn("");
  restore();
  restore = null;
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(parsed).toEqual([
    expect.objectContaining({ level: "info", component: "console", msg: "Running next.config.mjs took 80ms" }),
    expect.objectContaining({ level: "error", component: "console", msg: "Error: boom\n    at render (page.tsx:1:1)" }),
  ]);
  expect(consoleText(["token=abc123 for %s", "x"])).toBe("token=[redacted] for x");
});
