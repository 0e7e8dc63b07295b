// bench:acquire's hand-written HTTP client must send what tRPC's own client sends and read what
// it reads, or the bench's HTTP rows would measure some other request.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTRPCClient, httpLink } from "@trpc/client";
import superjson from "superjson";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../server/trpc/root.ts";
import { rawMutation } from "./bench-acquire-raw-client.ts";

interface Seen {
  method: string | undefined;
  url: string | undefined;
  contentType: string | undefined;
  authorization: string | undefined;
  body: string;
}

const answerValue = { rung: "baseline", at: new Date("2026-12-03T10:00:00.000Z"), size: 2n ** 60n, none: undefined };
const input = { repository: { identity: "example.test/a/b" }, workContextId: undefined, workspace: "/w/1" };

describe("the bench's raw HTTP client", () => {
  let server: Server;
  let url: string;
  const seen: Seen[] = [];
  let status = 200;
  let connections = 0;

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        seen.push({
          method: req.method,
          url: req.url,
          contentType: req.headers["content-type"],
          authorization: req.headers.authorization,
          body: Buffer.concat(chunks).toString("utf8"),
        });
        const answer =
          status === 200
            ? { result: { data: superjson.serialize(answerValue) } }
            : { error: { json: { message: "refused", code: -32600, data: { code: "BAD_REQUEST" } } } };
        const bytes = Buffer.from(JSON.stringify(answer));
        res.writeHead(status, { "content-type": "application/json", "content-length": bytes.length });
        res.end(bytes);
      });
    });
    server.on("connection", () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/trpc`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("sends tRPC's request for a mutation and reads its answer as tRPC's client does", async () => {
    const trpc = createTRPCClient<AppRouter>({
      links: [httpLink({ url, transformer: superjson, headers: { authorization: "Bearer t-1" } })],
    });
    const raw = rawMutation(url, "t-1");
    seen.length = 0;
    const viaTrpc = await trpc.workspace.acquire.mutate(input as never);
    const viaRaw = await raw.mutate("workspace.acquire", input);
    expect(viaRaw).toEqual(viaTrpc);
    expect(viaRaw).toEqual(answerValue);
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    raw.close();
  });

  it("keeps its connection alive, opens another when the server ended an idle one, and refuses error answers", async () => {
    const raw = rawMutation(url, "t-2");
    const before = connections;
    await raw.mutate("workspace.acquire", input);
    await raw.mutate("workspace.acquire", input);
    expect(connections - before).toBe(1);
    // The server ends the connection while it is idle (as its keep-alive timeout does).
    server.closeIdleConnections();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await raw.mutate("workspace.acquire", input);
    expect(connections - before).toBe(2);
    status = 400;
    await expect(raw.mutate("workspace.acquire", input)).rejects.toThrow(/HTTP 400/);
    status = 200;
    raw.close();
  });
});
