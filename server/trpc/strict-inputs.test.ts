// Every procedure's input schema refuses unknown keys all the way down, so a lax schema added
// later fails here instead of silently dropping a misspelt field.
import { expect, it } from "vitest";
import type { z } from "zod";
import { appRouter } from "./root.ts";
import { knownKeysAt, laxInputObjects } from "./strict-schema.ts";

const procedures = Object.entries(
  appRouter._def.procedures as unknown as Record<string, { _def: { inputs: z.ZodType[] } }>,
);

it("enumerates the procedures", () => {
  expect(procedures.length).toBeGreaterThan(30);
});

it.each(procedures.map(([path]) => path))("%s: every input object is strict", (path) => {
  const procedure = procedures.find(([p]) => p === path)?.[1];
  const lax = (procedure?._def.inputs ?? []).flatMap((schema) => laxInputObjects(schema));
  expect(lax).toEqual([]);
});

// tRPC's infinite queries (the dashboard's paged lists) send `direction` beside `cursor`.
const paged = procedures.filter(([, p]) => p._def.inputs[0] && knownKeysAt(p._def.inputs[0], []).includes("cursor"));

it("finds the paged procedures", () => {
  expect(paged.map(([path]) => path)).toEqual(expect.arrayContaining(["dashboard.pins", "snapshot.list"]));
});

it.each(paged.map(([path]) => path))("%s: a paged input takes the direction an infinite query adds", (path) => {
  const parsed = inputOf(path).safeParse({ direction: "forward" });
  expect(parsed.error?.issues ?? []).toEqual([]);
});

function inputOf(path: string): z.ZodType {
  const schema = procedures.find(([p]) => p === path)?.[1]._def.inputs[0];
  if (!schema) throw new Error(`${path} has no input schema`);
  return schema;
}
