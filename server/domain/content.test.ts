import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  childrenFirst,
  layerDifferences,
  layerUuidSchema,
  newLayersOutsideHeads,
  orderNewLayers,
  splitByBudget,
  type LayerDescriptor,
} from "./content.ts";

const layer = (uuid: string, parentUuid: string | null): LayerDescriptor => ({
  uuid,
  parentUuid,
  digest: "a".repeat(64),
  sizeBytes: 1,
  kind: "patch",
});

describe("content rules", () => {
  it("orders new layers parents first and finds cycles", () => {
    const ordered = orderNewLayers([layer("c", "b"), layer("a", null), layer("b", "a"), layer("x", "existing")]);
    expect(ordered.ok && ordered.order.map((l) => l.uuid)).toEqual(["a", "b", "c", "x"]);
    const cycle = orderNewLayers([layer("p", "q"), layer("q", "r"), layer("r", "p")]);
    expect(cycle.ok).toBe(false);
    expect(!cycle.ok && [...cycle.cycle].sort()).toEqual(["p", "q", "r"]);
    expect(orderNewLayers([layer("s", "s")]).ok).toBe(false);
  });

  it("puts every parent before its children for any forest (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(30), { maxLength: 30 }), (parents) => {
        // Layer i's parent is some earlier layer (or none), then the list is shuffled.
        const layers = parents.map((p, i) => layer(`l${i}`, i === 0 || p % (i + 1) === i ? null : `l${p % i}`));
        const shuffled = [...layers].sort(() => Math.random() - 0.5);
        const ordered = orderNewLayers(shuffled);
        if (!ordered.ok) return false;
        const position = new Map(ordered.order.map((l, i) => [l.uuid, i]));
        return (
          ordered.order.length === layers.length &&
          layers.every((l) => !l.parentUuid || position.get(l.parentUuid)! < position.get(l.uuid)!)
        );
      }),
    );
  });

  it("names new layers no head reaches", () => {
    const fresh = [layer("a", null), layer("b", "a"), layer("stray", null), layer("c", "b")];
    expect(newLayersOutsideHeads(fresh, ["c"])).toEqual(["stray"]);
    expect(newLayersOutsideHeads(fresh, ["c", "stray"])).toEqual([]);
  });

  it("orders a batch children first", () => {
    const rows = [
      { uuid: "a", parentUuid: null },
      { uuid: "b", parentUuid: "a" },
      { uuid: "c", parentUuid: "b" },
      { uuid: "z", parentUuid: "outside" },
    ];
    const order = childrenFirst(rows).map((r) => r.uuid);
    expect(order.indexOf("c")).toBeLessThan(order.indexOf("b"));
    expect(order.indexOf("b")).toBeLessThan(order.indexOf("a"));
  });

  it("tells which identity fields of a layer differ", () => {
    const l = layer("a", null);
    expect(layerDifferences(l, { parentUuid: null, digest: l.digest, sizeBytes: 1n, kind: "patch" })).toEqual([]);
    expect(layerDifferences(l, { parentUuid: "x", digest: "b".repeat(64), sizeBytes: 2, kind: "bundle" })).toEqual([
      "parentUuid",
      "digest",
      "sizeBytes",
      "kind",
    ]);
  });

  it("accepts canonical non-nil UUIDs only", () => {
    const id = randomUUID();
    expect(layerUuidSchema.parse(id.toUpperCase())).toBe(id);
    expect(layerUuidSchema.safeParse("00000000-0000-0000-0000-000000000000").success).toBe(false);
    expect(layerUuidSchema.safeParse("not-a-uuid").success).toBe(false);
  });

  it("splits batches by row count and byte budget", () => {
    const sizes = [10, 10, 10, 100, 5, 5, 5, 5];
    const groups = splitByBudget(sizes, (s) => s, 3, 30);
    expect(groups).toEqual([[10, 10, 10], [100], [5, 5, 5], [5]]);
    expect(splitByBudget([], (s: number) => s, 3, 30)).toEqual([]);
  });
});
