// host.list through tRPC callers on both databases: an agent gets the names of the hosts with a
// live worker and nothing else; a signed-in operator gets every host with its workers and queue;
// a caller with neither a token nor a session is refused.
import { beforeAll, expect, it } from "vitest";
import { trustUser } from "../domain/scope.ts";
import { registerWorker, workerStopped } from "../jobs/worker-hosts.ts";
import { describeEachDatabase } from "../testing/databases.ts";
import { makeAgent, uniqueName, type TestAgent } from "../testing/lineage.ts";
import { createContextInner } from "./init.ts";
import { createCaller } from "./root.ts";
import { failureCode } from "../testing/calls.ts";

describeEachDatabase("host API", (catalog) => {
  let agent: TestAgent;
  const live = uniqueName("build");
  const gone = uniqueName("gone");
  const nobody = uniqueName("laptop");
  const operator = trustUser("user-op", "op@example.test", "operator");
  const callerAs = (opts: { token?: string; user?: typeof operator }) =>
    createCaller(
      createContextInner({
        db: catalog().db,
        authorization: opts.token ? `Bearer ${opts.token}` : null,
        user: opts.user ?? null,
      }),
    );

  beforeAll(async () => {
    const db = catalog().db;
    agent = await makeAgent(db, "hosts");
    await registerWorker(db, { id: `${live}|101|1|b|n|x`, host: live, version: "1.2.3", pid: 101 });
    await registerWorker(db, { id: `${gone}|102|1|b|n|y`, host: gone, version: "1.2.3", pid: 102 });
    await workerStopped(db, `${gone}|102|1|b|n|y`);
    await callerAs({ token: agent.token }).job.enqueueCapture({
      host: nobody,
      dir: "/home/dev/checkout",
      key: {
        repository: { identity: `example.invalid/${uniqueName("h")}` },
        backendKind: "local",
        baseImage: "img",
        workContextId: "wc",
      },
    });
  });

  it("an agent sees the hosts with a live worker, and nothing of workers or queues", async () => {
    const answer = await callerAs({ token: agent.token }).host.list();
    expect(answer.view).toBe("agent");
    expect(answer.hosts).toEqual([{ name: live, live: true, lastSeenAt: expect.any(Date) }]);
  });

  it("an operator sees every host, with its workers and its queue", async () => {
    const answer = await callerAs({ user: operator }).host.list();
    if (answer.view !== "staff") throw new Error("expected the staff view");
    const byName = new Map(answer.hosts.map((h) => [h.name, h]));
    expect(byName.get(live)).toMatchObject({
      live: true,
      workers: [{ id: `${live}|101|1|b|n|x`, pid: 101, version: "1.2.3", live: true, stoppedAt: null }],
      queue: [],
    });
    expect(byName.get(gone)).toMatchObject({ live: false, workers: [{ live: false, stoppedAt: expect.any(Date) }] });
    expect(byName.get(nobody)).toMatchObject({
      live: false,
      lastSeenAt: null,
      workers: [],
      queue: [{ kind: "capture", created: 1, retry: 0, active: 0 }],
    });
  });

  it("refuses a caller with neither an agent token nor a session", async () => {
    expect(await failureCode(callerAs({}).host.list())).toBe("UNAUTHORIZED");
    expect(await failureCode(callerAs({ token: "not-a-token" }).host.list())).toBe("UNAUTHORIZED");
  });
});
