// Vitest setup file of the test files that share their worker process with the next file
// (vitest.config.ts, project "shared"): a file fails if it leaves the process other than it found
// it, so it cannot change what a later file sees. What a file may not leave changed: the
// environment, the working directory, and the app's process-wide catalog and auth handles (which
// read the environment once). A file that needs to change them belongs in the "isolated" project.
import { afterAll, expect } from "vitest";

const HANDLES = ["__strataCatalog", "__strataAuth"] as const;

const env = { ...process.env };
const cwd = process.cwd();
const handles = HANDLES.map((name) => (globalThis as Record<string, unknown>)[name]);

afterAll(() => {
  const left = {
    env: { ...process.env },
    cwd: process.cwd(),
    handles: HANDLES.map((name) => (globalThis as Record<string, unknown>)[name]),
  };
  expect(
    left,
    "this test file changed process-wide state that later files in its worker would see: " +
      "restore it, or list the file in vitest.config.ts's ISOLATED files",
  ).toEqual({ env, cwd, handles });
});
