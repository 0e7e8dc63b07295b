// The CLI's creating calls over HTTP when an answer is lost: a proxy in front of a real server
// (the app's handlers on a test database of each kind) lets the server do the call, then drops
// the answer; the client retries with the same Idempotency-Key and the work is done once.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../server/testing/databases.ts";
import { isStrataError } from "../server/domain/errors.ts";
import { serveApp, type TestServer } from "../server/testing/http-server.ts";
import {
  baselineKeyOf,
  cleanEvidence,
  lineageKeyOf,
  makeAgent,
  manifestOf,
  oid,
  scenario,
  uniqueName,
} from "../server/testing/lineage.ts";
import { remoteRestorePort } from "./restore-port.ts";
import { connectServer } from "./connection.ts";
import { remoteCatalog } from "./catalog-port.ts";

interface Seen {
  path: string;
  key: string | undefined;
}

/** Forwards every request to `upstream`; the answer to a request `drop` picks never arrives. */
async function lossyProxy(upstream: string, drop: (seen: Seen, index: number) => boolean) {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const entry = {
        path: new URL(req.url ?? "/", "http://x").pathname,
        key: req.headers["idempotency-key"] as string,
      };
      seen.push(entry);
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === "string" && e[0] !== "host"),
      );
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      void fetch(`${upstream}${req.url}`, { method: req.method, headers, body })
        .then(async (answer) => {
          const bytes = Buffer.from(await answer.arrayBuffer());
          // The server did the work and answered; the client never hears of it.
          if (drop(entry, seen.length - 1)) return void req.socket.destroy();
          res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
          res.end(bytes);
        })
        .catch(() => req.socket.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

describeEachDatabase("creating calls retried with their idempotency key", (catalog) => {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await serveApp({ db: catalog().db });
  });
  afterAll(() => server?.close());

  it("appends one checkpoint when the first answer is lost", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db);
    const proxy = await lossyProxy(server!.url, (s, index) => s.path.endsWith("/checkpoint.append") && index === 0);
    try {
      const s = scenario("retry");
      const commit = oid(uniqueName("c"));
      const result = await remoteCatalog({ url: proxy.url, token: agent.token }).appendCheckpoint({
        key: lineageKeyOf(s, uniqueName("wc")),
        observedHeadId: null,
        manifest: manifestOf({ head: commit, branch: null }),
      });
      expect(result.outcome).toBe("appended");
      expect(proxy.seen.map((c) => c.path)).toEqual(["/api/trpc/checkpoint.append", "/api/trpc/checkpoint.append"]);
      expect(proxy.seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
      expect(proxy.seen[1]!.key).toBe(proxy.seen[0]!.key);
      expect(await db.snapshot.count({ where: { agentId: agent.scope.agentId } })).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it("acquires one workspace (one restore) when the first answer is lost", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db);
    const proxy = await lossyProxy(server!.url, (s, index) => s.path.endsWith("/workspace.acquire") && index === 0);
    try {
      const s = scenario("retry-acquire");
      const plan = await remoteRestorePort({ url: proxy.url, token: agent.token }).acquire({
        repository: s.repository,
        backendKind: s.backendKind,
        baseImage: s.baseImage,
        canonicalRef: s.canonicalRef,
        workspace: `/workspaces/${uniqueName("ws")}`,
        host: "host-1",
      });
      expect(proxy.seen).toHaveLength(2);
      expect(proxy.seen[1]!.key).toBe(proxy.seen[0]!.key);
      const restores = await db.restore.findMany({ where: { agentId: agent.scope.agentId }, select: { id: true } });
      expect(restores.map((r) => r.id)).toEqual([plan.restoreId]);
    } finally {
      await proxy.close();
    }
  });

  it("enqueues one capture job when the first answer is lost", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db);
    const proxy = await lossyProxy(server!.url, (_s, index) => index === 0);
    try {
      const { client, once } = connectServer({ url: proxy.url, token: agent.token });
      const input = {
        host: "build-1",
        dir: "/home/dev/checkout",
        key: lineageKeyOf(scenario("retry-job"), uniqueName("wc")),
      };
      const job = await once((opts) => client.job.enqueueCapture.mutate(input, opts));
      expect(proxy.seen).toHaveLength(2);
      expect(proxy.seen[1]!.key).toBe(proxy.seen[0]!.key);
      const jobs = await db.job.findMany({ where: { agentId: agent.scope.agentId }, select: { id: true } });
      expect(jobs.map((j) => j.id)).toEqual([job.id]);
    } finally {
      await proxy.close();
    }
  });

  it("never retries a refusal, and gives each operation its own key", async () => {
    const db = catalog().db;
    const agent = await makeAgent(db);
    const proxy = await lossyProxy(server!.url, () => false);
    try {
      const s = scenario("retry-refused");
      const commit = oid(uniqueName("c"));
      const port = remoteCatalog({ url: proxy.url, token: agent.token });
      const publish = (observedHeadId: string | null, evidence = cleanEvidence(commit)) =>
        port.publishBaseline({
          key: baselineKeyOf(s),
          commit,
          manifest: manifestOf({ head: commit, branch: "main" }),
          evidence,
          observedHeadId,
        });
      const refused = await publish(null, cleanEvidence(commit, { modifiedCount: 1 })).catch((e: unknown) => e);
      expect(isStrataError(refused, "EVIDENCE_INVALID")).toBe(true);
      expect(proxy.seen).toHaveLength(1);
      expect((await publish(null)).outcome).toBe("published");
      expect((await publish(null)).outcome).toBe("unchanged");
      expect(new Set(proxy.seen.map((c) => c.key)).size).toBe(3);
    } finally {
      await proxy.close();
    }
  });
});
