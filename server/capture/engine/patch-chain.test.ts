import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { CaptureManifest, PatchLink } from "../../domain/capture-manifest.ts";
import { completeChain, planPatchChain } from "./patch-chain.ts";

const HEAD = "1".repeat(40);
const TREE = "2".repeat(40);
const link = (uuid: string, parent: string | null): PatchLink => ({
  uuid,
  parent,
  digest: "a".repeat(64),
  size: 10,
  kind: parent ? "incremental" : "full",
  base: parent ? TREE : HEAD,
  tree: TREE,
});
const U1 = "00000000-0000-4000-8000-000000000001";
const U2 = "00000000-0000-4000-8000-000000000002";

function previous(patches: PatchLink[], head = HEAD): CaptureManifest {
  return { head, tree: TREE, patches } as CaptureManifest;
}

describe("the patch chain", () => {
  it("starts full, then grows from the previous tree", () => {
    expect(planPatchChain({ previous: null, head: HEAD, headBase: HEAD, fullEvery: 5 })).toEqual({
      kind: "full",
      base: HEAD,
      kept: [],
    });
    const chain = [link(U1, null)];
    expect(planPatchChain({ previous: previous(chain), head: HEAD, headBase: HEAD, fullEvery: 5 })).toEqual({
      kind: "incremental",
      base: TREE,
      kept: chain,
    });
  });

  it("restarts when HEAD moved, when the chain is fullEvery long, and after a capture equal to HEAD", () => {
    const chain = [link(U1, null), link(U2, U1)];
    const other = "3".repeat(40);
    expect(planPatchChain({ previous: previous(chain), head: other, headBase: other, fullEvery: 5 }).kind).toBe("full");
    expect(planPatchChain({ previous: previous(chain), head: HEAD, headBase: HEAD, fullEvery: 2 }).kind).toBe("full");
    expect(planPatchChain({ previous: previous([]), head: HEAD, headBase: HEAD, fullEvery: 5 }).kind).toBe("full");
  });

  it("links a new patch to the last one and adds nothing for an empty patch", () => {
    const kept = [link(U1, null)];
    const grown = completeChain(
      { plan: { kind: "incremental", base: TREE, kept }, bytes: Buffer.from("diff"), files: new Map() },
      "4".repeat(40),
    );
    expect(grown.patches).toHaveLength(2);
    expect(grown.patches[1]).toMatchObject({
      parent: U1,
      kind: "incremental",
      base: TREE,
      tree: "4".repeat(40),
      size: 4,
    });
    expect(grown.patches[1]).not.toHaveProperty("files");
    expect(grown.artifacts.map((a) => a.digest)).toEqual([grown.patches[1]?.digest]);
    expect(
      completeChain({ plan: { kind: "full", base: HEAD, kept: [] }, bytes: Buffer.alloc(0), files: new Map() }, TREE),
    ).toEqual({ patches: [], artifacts: [] });
  });

  it("lists the files a patch carries whole on its link, and their content among the artifacts", () => {
    const [a, b] = ["a".repeat(40), "b".repeat(40)];
    const files = new Map([
      [b, Buffer.from("bee")],
      [a, Buffer.from("ay")],
    ]);
    const grown = completeChain(
      { plan: { kind: "full", base: HEAD, kept: [] }, bytes: Buffer.from("diff"), files },
      TREE,
    );
    const sha = (text: string) => createHash("sha256").update(text).digest("hex");
    expect(grown.patches[0]?.files).toEqual([
      { oid: a, digest: sha("ay"), size: 2 },
      { oid: b, digest: sha("bee"), size: 3 },
    ]);
    expect(grown.artifacts.map((x) => x.digest)).toEqual([sha("diff"), sha("ay"), sha("bee")]);
  });
});
