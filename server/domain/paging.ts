// Paged inputs. tRPC's infinite queries (the dashboard's pages, an agent's useInfiniteQuery)
// add `direction` to the input next to `cursor`; the pages only go forward, so it is accepted
// and has no effect.
import { z } from "zod";

export const pageDirectionSchema = z.enum(["forward", "backward"]).optional();
