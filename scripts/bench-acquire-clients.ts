// bench:acquire's HTTP clients, in a process of their own (forked by scripts/bench-acquire.ts) so
// the server's event loop only serves, as it does for real agents on other machines. One tRPC
// client per agent (no batching: one acquire, one request) with its token, whose fetch keeps its
// connections alive. The parent sends `run` messages and gets each load's latencies back.
import { createTRPCClient, httpLink, type TRPCClient } from "@trpc/client";
import superjson from "superjson";
import type { AppRouter } from "../server/trpc/root.ts";
import { runLoad, type Load, type LoadResult, type Shape } from "./bench-acquire-load.ts";

export type ClientsRequest =
  | { type: "connect"; url: string; tokens: string[] }
  | { type: "run"; shape: Shape; load: Load; total: number; offset: number };
export type ClientsReply =
  | { type: "connected" }
  /** cpuMs: the clients' process, user + system, during the load. */
  | { type: "result"; result: LoadResult; cpuMs: number }
  | { type: "error"; message: string };

let clients: TRPCClient<AppRouter>[] = [];

const reply = (message: ClientsReply) => process.send!(message);

process.on("message", (message: ClientsRequest) => {
  void (async () => {
    try {
      if (message.type === "connect") {
        clients = message.tokens.map((token) =>
          createTRPCClient<AppRouter>({
            links: [
              httpLink({ url: message.url, transformer: superjson, headers: { authorization: `Bearer ${token}` } }),
            ],
          }),
        );
        reply({ type: "connected" });
        return;
      }
      const acquire = (
        agent: number,
        input: Parameters<(typeof clients)[number]["workspace"]["acquire"]["mutate"]>[0],
      ) => clients[agent]!.workspace.acquire.mutate(input);
      const before = process.cpuUsage();
      const result = await runLoad(acquire, message.shape, message.load, message.total, message.offset);
      const cpu = process.cpuUsage(before);
      reply({ type: "result", result, cpuMs: (cpu.user + cpu.system) / 1000 });
    } catch (error) {
      reply({ type: "error", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    }
  })();
});
process.on("disconnect", () => process.exit(0));
