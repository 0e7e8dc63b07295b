// The SDK sends a creating call twice (with the same Idempotency-Key) only when the server does
// its work once per key: its list of keyed procedures is exactly the router's (each marked with
// `.meta({ idempotencyKey: true })` where withIdempotencyKey wraps it).
import { expect, it } from "vitest";
import { restOperations } from "../server/openapi/rest-operations.ts";
import { KEYED_PROCEDURES } from "./connection.ts";

it("retries with a key exactly the procedures the server answers once per key", () => {
  const keyed = restOperations()
    .filter((op) => op.idempotencyKey)
    .map((op) => op.procedure);
  expect([...KEYED_PROCEDURES].sort()).toEqual(keyed.sort());
});
