// Paged inputs. tRPC's infinite queries (the dashboard's pages, an agent's useInfiniteQuery)
// add `direction` to the input next to `cursor`; the pages only go forward, so it is accepted
// and has no effect.
import { z } from "zod";
import { StrataError } from "./errors.ts";

export const pageDirectionSchema = z.enum(["forward", "backward"]).optional();

/** A page cursor: the last row's time and id (an id may hold "|"). */
export function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(`${createdAt.toISOString()}|${id}`).toString("base64url");
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  // Only the first "|" separates: an id (a pin id, say) may hold "|" itself.
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const bar = text.indexOf("|");
  const at = bar < 0 ? "" : text.slice(0, bar);
  const id = bar < 0 ? "" : text.slice(bar + 1);
  const createdAt = new Date(at);
  if (!id || Number.isNaN(createdAt.getTime())) {
    throw new StrataError("INVALID_INPUT", "The cursor is not one this API returned.", {
      hint: "Pass the nextCursor of the previous page, or omit it for the first page.",
    });
  }
  return { createdAt, id };
}
