// Every procedure's input schema refuses unknown keys all the way down, so a lax schema added
// later fails here instead of silently dropping a misspelt field.
import { expect, it } from "vitest";
import type { z } from "zod";
import { appRouter } from "./root.ts";
import { laxInputObjects } from "./strict-schema.ts";

const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: { inputs: z.ZodType[] } }>);

it("enumerates the procedures", () => {
  expect(procedures.length).toBeGreaterThan(30);
});

it.each(procedures.map(([path]) => path))("%s: every input object is strict", (path) => {
  const procedure = procedures.find(([p]) => p === path)?.[1];
  const lax = (procedure?._def.inputs ?? []).flatMap((schema) => laxInputObjects(schema));
  expect(lax).toEqual([]);
});
