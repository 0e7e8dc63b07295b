import { z } from "zod";
import { blobDigestSchema } from "../../domain/content.ts";
import { missingBlobs } from "../../content/blobs.ts";
import { agentProcedure, router } from "../init.ts";

// Bytes travel over HTTP (PUT/GET /api/blobs/<sha256>); this asks which ones to send.
export const blobRouter = router({
  /**
   * The digests the caller must upload: not stored, or not granted to it. The others get their
   * grace window restarted.
   */
  missing: agentProcedure
    .input(z.strictObject({ digests: z.array(blobDigestSchema).max(10_000) }))
    .output(z.object({ missing: z.array(z.string()) }))
    .mutation(async ({ ctx, input }) => ({ missing: await missingBlobs(ctx.db, ctx.agent.agentId, input.digests) })),
});
