// An unexpected error's stack, with the frames in the compiled CLI (dist/cli) mapped back to the
// TypeScript sources through the build's linked .map files. The maps are read here, when such an
// error is printed, rather than by Node at every start (process.setSourceMapsEnabled parses the
// map of every module as it loads, about 15 ms of each short command).
import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** `file:///…/x.mjs:12:34` or `/…/x.mjs:12:34` in a stack frame. */
const FRAME_LOCATION = /((?:file:\/\/)?\/[^\s()]+\.mjs):(\d+):(\d+)/g;

export function sourceMappedStack(stack: string): string {
  const maps = new Map<string, SourceMap | null>();
  const mapOf = (file: string): SourceMap | null => {
    if (!maps.has(file)) {
      try {
        maps.set(file, new SourceMap(JSON.parse(readFileSync(`${file}.map`, "utf8"))));
      } catch {
        maps.set(file, null); // no map beside it: the frame stays as it is
      }
    }
    return maps.get(file)!;
  };
  return stack.replace(FRAME_LOCATION, (frame, location: string, line: string, column: string) => {
    const file = location.startsWith("file:") ? fileURLToPath(location) : location;
    // findEntry counts lines and columns from 0; stacks count them from 1.
    const entry = mapOf(file)?.findEntry(Number(line) - 1, Number(column) - 1);
    if (!entry || !("originalSource" in entry) || !entry.originalSource) return frame;
    const source = entry.originalSource.startsWith("file:")
      ? fileURLToPath(entry.originalSource)
      : path.resolve(path.dirname(file), entry.originalSource);
    return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}
