// The app under test's output, kept whole in `server.log` in its data directory, where the run's
// teardown (e2e/log-check.ts) looks for anything that must never be logged. Only what an
// engineer reading the test run needs is passed through: lines that are not routine
// (JSON lines at info or debug level, one per request and job attempt, stay in the file).
import { createWriteStream } from "node:fs";
import path from "node:path";

const ROUTINE = /^\{"level":"(info|debug|trace)"/;

function passThrough(stream, out, file) {
  let partial = "";
  stream.on("data", (chunk) => {
    file.write(chunk);
    const lines = (partial + chunk.toString()).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) if (!ROUTINE.test(line)) out.write(`${line}\n`);
  });
  stream.on("end", () => {
    if (partial && !ROUTINE.test(partial)) out.write(`${partial}\n`);
  });
}

/** Keeps the child's stdout and stderr in `<dataDir>/server.log`, passing the unusual lines on. */
export function keepLog(child, dataDir) {
  const file = createWriteStream(path.join(dataDir, "server.log"), { flags: "a" });
  passThrough(child.stdout, process.stdout, file);
  passThrough(child.stderr, process.stderr, file);
  child.on("exit", () => file.end());
}
