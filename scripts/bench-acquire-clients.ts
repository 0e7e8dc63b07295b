// bench:acquire's HTTP clients, in a process of their own (forked by scripts/bench-acquire.ts) so
// the server's event loop only serves, as it does for real agents on other machines. One client
// per agent (no batching: one acquire, one request) with its token, on keep-alive connections.
// The parent sends `run` messages and gets each load's latencies back.
//
// The clients share the machine's cores with the server and PostgreSQL, which real agents do
// not, so by default (`--http-client raw`) they write tRPC's requests by hand
// (bench-acquire-raw-client.ts, about 0.12 ms of CPU per acquire here). `--http-client node`
// sends them through tRPC's client on a small fetch over node:http (nodeFetch, 0.25-0.5 ms), and
// `--http-client fetch` through tRPC's client on the global fetch, as the CLI does (Node 20's
// fetch, undici and web streams, spent 0.5-0.7 ms, more than the server). The requests on the
// wire are tRPC's every way (same method, path, content type, authorization and body).
import http from "node:http";
import { createTRPCClient, httpLink, type TRPCClient } from "@trpc/client";
import superjson from "superjson";
import type { AppRouter } from "../server/trpc/root.ts";
import type { RestorePlan } from "../server/domain/views.ts";
import { runLoad, type Acquire, type Load, type LoadResult, type Shape } from "./bench-acquire-load.ts";
import { rawMutation } from "./bench-acquire-raw-client.ts";

export type HttpClient = "node" | "fetch" | "raw";
export type ClientsRequest =
  | { type: "connect"; url: string; tokens: string[]; httpClient: HttpClient }
  | { type: "run"; shape: Shape; load: Load; total: number; offset: number };
export type ClientsReply =
  | { type: "connected" }
  /** cpuMs: the clients' process, user + system, during the load. */
  | { type: "result"; result: LoadResult; cpuMs: number }
  | { type: "error"; message: string };

const keepAlive = new http.Agent({ keepAlive: true });

/** The part of fetch tRPC's httpLink uses (a string body, plain headers, ok and json()), on node:http. */
function nodeFetch(
  url: string | URL | Request,
  init?: { method?: string; headers?: HeadersInit; body?: unknown },
): Promise<{ ok: boolean; status: number; json(): Promise<unknown> }> {
  const body = typeof init?.body === "string" ? init.body : undefined;
  if (init?.body != null && body === undefined) throw new Error("nodeFetch sends string bodies only");
  return new Promise((resolve, reject) => {
    const given = init?.headers ?? {};
    const headers: Record<string, string | number> = Object.fromEntries(
      Array.isArray(given) || given instanceof Headers ? given : Object.entries(given),
    );
    if (body !== undefined) headers["content-length"] = Buffer.byteLength(body);
    const req = http.request(
      url instanceof Request ? url.url : url,
      { method: init?.method ?? "GET", headers, agent: keepAlive },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const status = res.statusCode ?? 0;
          resolve({ ok: status >= 200 && status < 300, status, json: async () => JSON.parse(text) as unknown });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** One acquire by agent number, through the client the parent asked for. */
function connect(url: string, tokens: string[], httpClient: HttpClient): Acquire {
  if (httpClient === "raw") {
    const raw = tokens.map((token) => rawMutation(url, token));
    return (agent, input) => raw[agent]!.mutate("workspace.acquire", input) as Promise<RestorePlan>;
  }
  const clients: TRPCClient<AppRouter>[] = tokens.map((token) =>
    createTRPCClient<AppRouter>({
      links: [
        httpLink({
          url,
          transformer: superjson,
          headers: { authorization: `Bearer ${token}` },
          ...(httpClient === "node" ? { fetch: nodeFetch } : {}),
        }),
      ],
    }),
  );
  return (agent, input) => clients[agent]!.workspace.acquire.mutate(input);
}

let acquire: Acquire | null = null;

const reply = (message: ClientsReply) => process.send!(message);

process.on("message", (message: ClientsRequest) => {
  void (async () => {
    try {
      if (message.type === "connect") {
        acquire = connect(message.url, message.tokens, message.httpClient);
        reply({ type: "connected" });
        return;
      }
      if (!acquire) throw new Error("run before connect");
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
