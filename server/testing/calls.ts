// Test support: what a failed tRPC caller call answered, as a client reads it.
import { TRPCError } from "@trpc/server";
import { isStrataError } from "../domain/errors.ts";

/** The StrataError code and data behind a failed call (the tRPC code when there is none). */
export async function failureOf(
  call: Promise<unknown>,
): Promise<{ code: string; data: Record<string, unknown> | null }> {
  try {
    await call;
  } catch (error) {
    const cause = error instanceof TRPCError ? error.cause : error;
    if (isStrataError(cause)) return { code: cause.code, data: cause.data ?? null };
    if (error instanceof TRPCError) return { code: error.code, data: null };
    throw error;
  }
  throw new Error("expected the call to fail");
}

/** The code alone. */
export async function failureCode(call: Promise<unknown>): Promise<string> {
  return (await failureOf(call)).code;
}
