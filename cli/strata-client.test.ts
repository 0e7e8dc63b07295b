// Publishing over HTTP: a real server (the app's tRPC and blob handlers behind node:http) on a
// test database of each kind, reached with an agent token.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { afterAll, beforeAll, expect, it } from "vitest";
import { handleBlobPut } from "../app/api/blobs/[digest]/blob-http.ts";
import type { Db } from "../server/db/client.ts";
import { describeEachDatabase } from "../server/db/test-databases.ts";
import { isStrataError } from "../server/domain/errors.ts";
import { addOrigin, initRepository, removeTemporaryDirectories, write } from "../server/git/test-repos.ts";
import { captureAndPublish } from "../server/services/capture-publish.ts";
import { consistencyViolations } from "../server/services/test-content.ts";
import { makeAgent, uniqueName } from "../server/services/test-lineage.ts";
import { createContextInner } from "../server/trpc/init.ts";
import { appRouter } from "../server/trpc/root.ts";
import { remoteCatalog } from "./strata-client.ts";

afterAll(removeTemporaryDirectories);

function toRequest(req: IncomingMessage, base: string): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(new URL(req.url ?? "/", base), {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    duplex: "half",
  } as RequestInit);
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}

/** The two routes a publisher uses, as the app serves them. */
function serve(db: Db, kind: "sqlite" | "postgres"): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const base = `http://${req.headers.host ?? "localhost"}`;
    const request = toRequest(req, base);
    const path = new URL(request.url).pathname;
    const blob = /^\/api\/blobs\/([^/]+)$/.exec(path);
    const handled = blob
      ? handleBlobPut(db, request, blob[1] ?? "")
      : fetchRequestHandler({
          endpoint: "/api/trpc",
          req: request,
          router: appRouter,
          createContext: () =>
            createContextInner({
              db,
              databaseKind: kind,
              authorization: request.headers.get("authorization"),
              user: null,
            }),
        });
    handled.then(
      (response) => send(res, response),
      () => {
        res.writeHead(500);
        res.end();
      },
    );
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, server });
    });
  });
}

describeEachDatabase("publishing over HTTP", (catalog, kind) => {
  let url = "";
  let server: Server | undefined;
  beforeAll(async () => {
    ({ url, server } = await serve(catalog().db, kind));
  });
  afterAll(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it("uploads, appends and registers layers with an agent token; unchanged the second time", async () => {
    const db = catalog().db;
    const { token } = await makeAgent(db);
    const port = remoteCatalog({ url, token });
    const root = initRepository({ "a.txt": "a\n" });
    addOrigin(root);
    write(root, "a.txt", "over http\n");
    const target = {
      kind: "checkpoint" as const,
      key: {
        repository: { identity: `example.invalid/${uniqueName("http")}` },
        backendKind: "local",
        baseImage: "test-image",
        workContextId: uniqueName("wc"),
      },
    };

    const first = await captureAndPublish(port, { dir: root, target });
    expect(first).toMatchObject({ outcome: "appended", layers: { registered: true } });
    expect(first.uploaded.blobs).toBeGreaterThanOrEqual(2);
    expect(await db.snapshotHead.count({ where: { snapshotId: first.snapshotId } })).toBe(2);
    expect(await consistencyViolations(db, { hashBlobs: true })).toEqual([]);

    const again = await captureAndPublish(port, { dir: root, target });
    expect(again).toMatchObject({ outcome: "unchanged", snapshotId: first.snapshotId });
  });

  it("answers with typed errors: a bad token, and a server that is not there", async () => {
    const root = initRepository({ "a.txt": "a\n" });
    write(root, "a.txt", "x\n");
    const target = {
      kind: "checkpoint" as const,
      key: {
        repository: { identity: `example.invalid/${uniqueName("http")}` },
        backendKind: "local",
        baseImage: "test-image",
        workContextId: uniqueName("wc"),
      },
    };
    const denied = await captureAndPublish(remoteCatalog({ url, token: "strata_not-a-token" }), {
      dir: root,
      target,
    }).catch((e: unknown) => e);
    expect(isStrataError(denied, "UNAUTHORIZED")).toBe(true);

    const gone = await captureAndPublish(remoteCatalog({ url: "http://127.0.0.1:9", token: "strata_x" }), {
      dir: root,
      target,
    }).catch((e: unknown) => e);
    expect(isStrataError(gone, "BLOB_STORE_FAILED")).toBe(true);
  });
});
