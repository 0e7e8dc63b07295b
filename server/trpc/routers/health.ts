import { z } from "zod";
import { getHealth } from "../../db/health.ts";
import { publicProcedure } from "../init.ts";

export const healthProcedure = publicProcedure
  .output(
    z.object({
      status: z.literal("ok"),
      database: z.enum(["sqlite", "postgres"]),
      migration: z.string().nullable(),
      migrationsApplied: z.number().int(),
      databaseTime: z.string(),
    }),
  )
  .query(({ ctx }) => getHealth(ctx.db));
