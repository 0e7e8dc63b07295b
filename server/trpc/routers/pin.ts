import { z } from "zod";
import { pinViewSchema } from "../../domain/content-views.ts";
import { entityIdSchema } from "../../domain/snapshot-keys.ts";
import {
  describePin,
  isPinActive,
  listAgentPins,
  listPinsInput,
  MAX_PIN_SECONDS,
  pinIdSchema,
  pinSnapshot,
  releasePin,
} from "../../content/pins.ts";
import { agentProcedure, router } from "../init.ts";

const pinRef = z.strictObject({ snapshotId: entityIdSchema, pinId: pinIdSchema });

// Usage holds, for agents: pin ids are the agent's own, taken on its own snapshots only (another
// agent's ids and snapshots answer exactly as unused ones).
export const pinRouter = router({
  pin: agentProcedure
    .input(
      pinRef.extend({
        purpose: z.string().trim().min(1).max(200).optional(),
        /** The pin stops protecting this long after it is taken (database clock). */
        expiresInSeconds: z.number().int().min(1).max(MAX_PIN_SECONDS).optional(),
      }),
    )
    .output(pinViewSchema)
    .mutation(async ({ ctx, input }) => {
      const pin = await pinSnapshot(ctx.db, {
        ...input,
        agentId: ctx.agent.agentId,
        holder: `agent:${ctx.agent.agentId}`,
      });
      return { ...pin, active: !pin.released };
    }),
  release: agentProcedure
    .input(pinRef)
    .output(pinViewSchema)
    .mutation(async ({ ctx, input }) => {
      const pin = await releasePin(ctx.db, {
        ...input,
        agentId: ctx.agent.agentId,
        holder: `agent:${ctx.agent.agentId}`,
      });
      return { ...pin, active: isPinActive(pin, new Date()) };
    }),
  inspect: agentProcedure
    .input(z.strictObject({ pinId: pinIdSchema }))
    .output(pinViewSchema)
    .query(({ ctx, input }) => describePin(ctx.db, input.pinId, { agentId: ctx.agent.agentId })),
  list: agentProcedure
    .input(listPinsInput)
    .output(z.array(pinViewSchema))
    .query(({ ctx, input }) => listAgentPins(ctx.db, { ...input, agentId: ctx.agent.agentId })),
});
