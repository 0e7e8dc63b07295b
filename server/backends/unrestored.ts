// The failures after which a backend's restore wrote nothing: they become an `unrestored`
// outcome (the caller walks the ladder); anything else is a failure of the host and is thrown.
import { isStrataError } from "../domain/errors.ts";
import type { BackendRestoreOutcome } from "./backend.ts";

const NOTHING_WRITTEN = new Set([
  "UNSAFE_TARGET",
  "INVALID_SNAPSHOT",
  "BLOB_MISSING",
  "BLOB_CORRUPT",
  "COMMITS_UNAVAILABLE",
  "DELTA_FAILED",
  "TREE_MISMATCH",
]);

export async function unrestoredOn(restore: () => Promise<BackendRestoreOutcome>): Promise<BackendRestoreOutcome> {
  try {
    return await restore();
  } catch (error) {
    if (isStrataError(error) && NOTHING_WRITTEN.has(error.code)) return { status: "unrestored", error };
    throw error;
  }
}
