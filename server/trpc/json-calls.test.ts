// The JSON-call handler calls a procedure's middlewares itself (callProcedure), so a procedure
// that brings its own caller must go to tRPC's handler, which calls it through that caller.
import { initTRPC } from "@trpc/server";
import type { AnyProcedure } from "@trpc/server/unstable-core-do-not-import";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { planJsonCalls } from "./json-calls.ts";

const t = initTRPC.create();
// tRPC types a procedure with its own caller as the function it becomes, not as a procedure.
const ownCaller = t.procedure
  .experimental_caller(async ({ invoke, _def }) =>
    invoke({
      path: "ownCaller",
      ctx: {},
      type: _def.type,
      getRawInput: async () => ({}),
      signal: undefined,
      batchIndex: 0,
    }),
  )
  .mutation(() => "through its caller") as unknown as AnyProcedure;
const router = t.router({
  plain: t.procedure.input(z.object({ n: z.number() })).mutation(({ input }) => input.n + 1),
  ownCaller,
});

const request = (path: string) => ({
  method: "POST",
  url: new URL(`http://127.0.0.1/api/trpc/${path}`),
  headers: new Headers({ "content-type": "application/json" }),
});
const options = { endpoint: "/api/trpc", maxBatchSize: 50 };

describe("plain JSON calls", () => {
  it("answers a plain procedure's call by running its middlewares", async () => {
    const calls = await planJsonCalls(router, options, request("plain"));
    expect(calls).not.toBeNull();
    const answer = await calls!.answer({
      readJson: async () => ({ n: 41 }),
      createContext: () => ({}),
      signal: undefined,
    });
    expect({ status: answer.status, body: JSON.parse(answer.body) }).toEqual({
      status: 200,
      body: { result: { data: 42 } },
    });
  });

  it("leaves a procedure with its own caller to tRPC's handler, alone or in a batch", async () => {
    expect(await planJsonCalls(router, options, request("ownCaller"))).toBeNull();
    expect(await planJsonCalls(router, options, request("plain,ownCaller?batch=1"))).toBeNull();
  });
});
