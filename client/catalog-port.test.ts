// Publishing over HTTP: a real server (the app's tRPC and blob handlers behind node:http) on a
// test database of each kind, reached with an agent token.
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeEachDatabase } from "../server/testing/databases.ts";
import { isStrataError } from "../server/domain/errors.ts";
import { addOrigin, initRepository, removeTemporaryDirectories, write } from "../server/testing/repos.ts";
import { captureAndPublish } from "../server/capture/capture-publish.ts";
import { consistencyViolations } from "../server/testing/content.ts";
import { makeAgent, uniqueName } from "../server/testing/lineage.ts";
import { serveApp, type TestServer } from "../server/testing/http-server.ts";
import { remoteCatalog } from "./catalog-port.ts";

afterAll(removeTemporaryDirectories);

describeEachDatabase("publishing over HTTP", (catalog) => {
  let url = "";
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await serveApp({ db: catalog().db });
    url = server.url;
  });
  afterAll(() => server?.close());

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
