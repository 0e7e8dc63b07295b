// The stack of an unexpected error names the TypeScript sources, though a short command no longer
// has Node map every module as it loads.
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { expect, it } from "vitest";
import { sourceMappedStack } from "./source-mapped-stack.ts";

const COMPILED = fileURLToPath(new URL("../dist/cli/main.mjs", import.meta.url));
const SOURCE = fileURLToPath(new URL("./main.ts", import.meta.url));

/** 1-based line and column of the first occurrence of `text` in a file. */
function positionOf(file: string, text: string): { line: number; column: number } {
  const lines = readFileSync(file, "utf8").split("\n");
  const line = lines.findIndex((l) => l.includes(text));
  if (line < 0) throw new Error(`${text} is not in ${file}`);
  return { line: line + 1, column: lines[line]!.indexOf(text) + 1 };
}

it("maps frames of the compiled CLI to the TypeScript line they came from, and leaves other frames alone", () => {
  const compiled = positionOf(COMPILED, "showHelpAfterError");
  const source = positionOf(SOURCE, "showHelpAfterError");
  const stack = [
    "Error: boom",
    `    at main (${pathToFileURL(COMPILED).href}:${compiled.line}:${compiled.column})`,
    `    at other (${COMPILED}:${compiled.line}:${compiled.column})`,
    "    at async ModuleJob.run (node:internal/modules/esm/module_job:325:25)",
    "    at elsewhere (/nowhere/without-a-map.mjs:3:4)",
  ].join("\n");
  const mapped = sourceMappedStack(stack).split("\n");
  expect(mapped[1]).toBe(`    at main (${SOURCE}:${source.line}:${source.column})`);
  expect(mapped[2]).toBe(`    at other (${SOURCE}:${source.line}:${source.column})`);
  expect(mapped.slice(3)).toEqual(stack.split("\n").slice(3));
});
