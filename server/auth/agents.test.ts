import { expect, it } from "vitest";
import { describeEachDatabase } from "../testing/databases.ts";
import { isStrataError } from "../domain/errors.ts";
import {
  authenticateAgent,
  createAgent,
  createAgentToken,
  hashToken,
  listAgents,
  revokeAgentTokens,
  VERIFIED_TOKEN_TTL_MS,
} from "./agents.ts";
import { openCatalog } from "../db/client.ts";
import { uniqueName } from "../testing/lineage.ts";

describeEachDatabase("agents and tokens", (catalog) => {
  it("shows a token once and stores only its SHA-256", async () => {
    const db = catalog().db;
    const issued = await createAgent(db, { name: uniqueName("builder") });
    expect(issued.token).toMatch(/^strata_/);
    const rows = await db.agentToken.findMany({ where: { agentId: issued.agentId } });
    expect(rows).toHaveLength(1);
    expect(rows[0]?.tokenHash).toBe(hashToken(issued.token));
    expect(JSON.stringify(rows)).not.toContain(issued.token);
    const listed = await listAgents(db);
    expect(JSON.stringify(listed, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain(
      issued.token,
    );
  });

  it("authenticates a bearer token to its agent, and nothing else", async () => {
    const db = catalog().db;
    const issued = await createAgent(db, { name: uniqueName("builder") });
    const scope = await authenticateAgent(db, `Bearer ${issued.token}`);
    expect(scope).toMatchObject({ agentId: issued.agentId, agentName: issued.agentName });
    expect(await authenticateAgent(db, null)).toBeNull();
    expect(await authenticateAgent(db, issued.token)).toBeNull();
    expect(await authenticateAgent(db, `Bearer ${issued.token}x`)).toBeNull();
    expect(await authenticateAgent(db, "Bearer strata_unknown")).toBeNull();
  });

  it("refuses a duplicate name", async () => {
    const db = catalog().db;
    const name = uniqueName("dup");
    await createAgent(db, { name });
    const error = await createAgent(db, { name }).catch((e: unknown) => e);
    expect(isStrataError(error, "CONFLICT")).toBe(true);
  });

  it("revokes one token by prefix or all of them; a revoked token fails", async () => {
    const db = catalog().db;
    const first = await createAgent(db, { name: uniqueName("rotating") });
    const second = await createAgentToken(db, { name: first.agentName, label: "rotation" });
    expect(await revokeAgentTokens(db, { name: first.agentName, prefix: first.prefix })).toBe(1);
    expect(await authenticateAgent(db, `Bearer ${first.token}`)).toBeNull();
    expect(await authenticateAgent(db, `Bearer ${second.token}`)).not.toBeNull();
    expect(await revokeAgentTokens(db, { name: first.agentName })).toBe(1);
    expect(await authenticateAgent(db, `Bearer ${second.token}`)).toBeNull();
    const missing = await revokeAgentTokens(db, { name: uniqueName("nobody") }).catch((e: unknown) => e);
    expect(isStrataError(missing, "NOT_FOUND")).toBe(true);
  });

  it("refuses the tokens of a disabled agent", async () => {
    const db = catalog().db;
    const issued = await createAgent(db, { name: uniqueName("disabled") });
    await db.agent.update({ where: { id: issued.agentId }, data: { disabledAt: new Date() } });
    expect(await authenticateAgent(db, `Bearer ${issued.token}`)).toBeNull();
  });

  it("a token revoked by another process stops working within the verification window", async () => {
    const db = catalog().db;
    const issued = await createAgent(db, { name: uniqueName("revoked-elsewhere") });
    expect(await authenticateAgent(db, `Bearer ${issued.token}`)).not.toBeNull();
    // Another process (the CLI, another server) revokes it through its own handle.
    const elsewhere = openCatalog(catalog().url);
    try {
      expect(await revokeAgentTokens(elsewhere.db, { name: issued.agentName })).toBe(1);
      expect(await authenticateAgent(elsewhere.db, `Bearer ${issued.token}`)).toBeNull();
    } finally {
      await elsewhere.close();
    }
    await new Promise((resolve) => setTimeout(resolve, VERIFIED_TOKEN_TTL_MS + 100));
    expect(await authenticateAgent(db, `Bearer ${issued.token}`)).toBeNull();
  });

  it("a token in steady use stays valid throughout (refreshed ahead of the window), and a revocation still ends it within the window", async () => {
    const db = catalog().db;
    const issued = await createAgent(db, { name: uniqueName("steady") });
    const bearer = `Bearer ${issued.token}`;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // Called every 100 ms for longer than the window: it stays valid throughout (refreshed ahead).
    const started = Date.now();
    while (Date.now() - started < VERIFIED_TOKEN_TTL_MS * 2) {
      expect(await authenticateAgent(db, bearer)).not.toBeNull();
      await sleep(100);
    }
    const elsewhere = openCatalog(catalog().url);
    try {
      expect(await revokeAgentTokens(elsewhere.db, { name: issued.agentName })).toBe(1);
    } finally {
      await elsewhere.close();
    }
    const revokedAt = Date.now();
    // Still called every 100 ms: refused from the window's end on, however steady the use.
    while (Date.now() - revokedAt < VERIFIED_TOKEN_TTL_MS + 600) {
      const agent = await authenticateAgent(db, bearer);
      if (Date.now() - revokedAt > VERIFIED_TOKEN_TTL_MS + 100) expect(agent).toBeNull();
      await sleep(100);
    }
  });
});
