import { describe, expect, it } from "vitest";
import { NODE_HEIGHT, NODE_WIDTH } from "./graph-layout.ts";
import { containsRect, cullGraph, layoutBounds, padRect, visibleRect } from "./graph-viewport.ts";

/** Nodes on a grid, `columns` wide, one column every 300 and one row every 120 (layout units). */
function grid(columns: number, rows: number) {
  const positions = new Map<string, { x: number; y: number }>();
  for (let c = 0; c < columns; c += 1)
    for (let r = 0; r < rows; r += 1) positions.set(`n${c}-${r}`, { x: c * 300, y: r * 120 });
  return positions;
}

describe("the part of the graph React Flow is given", () => {
  it("is the viewport in layout coordinates, at any zoom", () => {
    expect(visibleRect({ x: 0, y: 0, zoom: 1 }, 1000, 600)).toEqual({ left: 0, top: 0, right: 1000, bottom: 600 });
    // Panned 500 right and zoomed out to a half: twice the layout shows.
    expect(visibleRect({ x: -500, y: 100, zoom: 0.5 }, 1000, 600)).toEqual({
      left: 1000,
      top: -200,
      right: 3000,
      bottom: 1000,
    });
  });

  it("grows by a margin and is asked for again only once the viewport leaves it", () => {
    const window = padRect({ left: 0, top: 0, right: 1000, bottom: 600 }, 0.5);
    expect(window).toEqual({ left: -500, top: -300, right: 1500, bottom: 900 });
    expect(containsRect(window, { left: 400, top: 200, right: 1400, bottom: 800 })).toBe(true);
    expect(containsRect(window, { left: 600, top: 200, right: 1600, bottom: 800 })).toBe(false);
  });

  it("holds the nodes meeting the window and the edges touching it, with both of their ends", () => {
    const positions = grid(100, 10);
    const edges = [
      // Inside.
      { id: "in", source: "n1-0", target: "n2-0" },
      // One end inside: the far end comes along so that React Flow can draw it.
      { id: "out-going", source: "n2-1", target: "n90-1" },
      // Both ends outside, crossing the window.
      { id: "across", source: "n0-9", target: "n99-9" },
      // Both ends outside, elsewhere.
      { id: "far", source: "n50-0", target: "n60-0" },
    ];
    const { nodeIds, edgeIds } = cullGraph(positions, edges, { left: 250, top: 0, right: 950, bottom: 1200 }, [
      "n70-5",
    ]);
    // Columns 0..3 meet x 250..950 (column 0 spans 0..224: not; 1: 300; 2: 600; 3: 900).
    for (let r = 0; r < 10; r += 1) {
      expect(nodeIds.has(`n1-${r}`)).toBe(true);
      expect(nodeIds.has(`n3-${r}`)).toBe(true);
      expect(nodeIds.has(`n4-${r}`)).toBe(false);
    }
    expect(edgeIds).toEqual(new Set(["in", "out-going", "across"]));
    for (const id of ["n90-1", "n0-9", "n99-9", "n70-5"]) expect(nodeIds.has(id)).toBe(true);
    expect(nodeIds.has("n50-0")).toBe(false);
    expect(nodeIds.size).toBe(3 * 10 + 4);
  });

  it("counts a node that only touches the window's edge as meeting it", () => {
    const positions = new Map([["a", { x: -NODE_WIDTH, y: -NODE_HEIGHT }]]);
    expect(cullGraph(positions, [], { left: 0, top: 0, right: 10, bottom: 10 }).nodeIds).toEqual(new Set(["a"]));
  });

  it("fits the whole layout (the fit button and the minimap), node boxes included", () => {
    expect(layoutBounds(new Map())).toBeNull();
    expect(layoutBounds(grid(3, 2))).toEqual({ left: 0, top: 0, right: 600 + NODE_WIDTH, bottom: 120 + NODE_HEIGHT });
    expect(layoutBounds(new Map([["a", { x: -50, y: 40 }]]))).toEqual({
      left: -50,
      top: 40,
      right: -50 + NODE_WIDTH,
      bottom: 40 + NODE_HEIGHT,
    });
  });
});
