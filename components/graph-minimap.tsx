"use client";
// The lineage graph's minimap: every laid-out node, drawn on a canvas from our own layout (React
// Flow's MiniMap draws only the nodes React Flow was given, and it is given only the part on
// screen, graph-viewport.ts), with the viewport's outline. A click or a drag centres the view
// there; the wheel zooms. Hidden on narrow screens by the stylesheet (.react-flow__minimap).
import { Panel, useStore, useReactFlow } from "@xyflow/react";
import { useEffect, useMemo, useRef, type PointerEvent, type WheelEvent } from "react";
import { NODE_HEIGHT, NODE_WIDTH } from "./graph-layout.ts";
import { layoutBounds } from "./graph-viewport.ts";

const WIDTH = 200;
const HEIGHT = 150;
const PAD = 6;

export function GraphMinimap({
  positions,
  colorOf,
  ariaLabel,
}: {
  positions: ReadonlyMap<string, { x: number; y: number }>;
  colorOf: (id: string) => string;
  ariaLabel: string;
}) {
  const canvas = useRef<HTMLCanvasElement | null>(null);
  const transform = useStore((s) => s.transform);
  const size = useStore((s) => ({ width: s.width, height: s.height }), sameSize);
  const flow = useReactFlow();
  const bounds = useMemo(() => layoutBounds(positions) ?? { left: 0, top: 0, right: 1, bottom: 1 }, [positions]);
  const [tx, ty, zoom] = transform;
  const view = {
    left: -tx / zoom,
    top: -ty / zoom,
    right: (-tx + size.width) / zoom,
    bottom: (-ty + size.height) / zoom,
  };
  // The map shows the whole graph and the viewport, whichever reaches further.
  const all = {
    left: Math.min(bounds.left, view.left),
    top: Math.min(bounds.top, view.top),
    right: Math.max(bounds.right, view.right),
    bottom: Math.max(bounds.bottom, view.bottom),
  };
  const scale = Math.min((WIDTH - 2 * PAD) / (all.right - all.left), (HEIGHT - 2 * PAD) / (all.bottom - all.top));
  const offsetX = PAD + (WIDTH - 2 * PAD - (all.right - all.left) * scale) / 2 - all.left * scale;
  const offsetY = PAD + (HEIGHT - 2 * PAD - (all.bottom - all.top) * scale) / 2 - all.top * scale;

  useEffect(() => {
    const el = canvas.current;
    const ctx = el?.getContext("2d");
    if (!el || !ctx) return;
    const ratio = window.devicePixelRatio || 1;
    if (el.width !== WIDTH * ratio) {
      el.width = WIDTH * ratio;
      el.height = HEIGHT * ratio;
    }
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, WIDTH, HEIGHT);
    const w = Math.max(1, NODE_WIDTH * scale);
    const h = Math.max(1, NODE_HEIGHT * scale);
    for (const [id, p] of positions) {
      ctx.fillStyle = colorOf(id);
      ctx.fillRect(p.x * scale + offsetX, p.y * scale + offsetY, w, h);
    }
    // Outside the viewport shaded, as React Flow's minimap does, and the viewport outlined.
    const style = getComputedStyle(el);
    const box = [
      view.left * scale + offsetX,
      view.top * scale + offsetY,
      (view.right - view.left) * scale,
      (view.bottom - view.top) * scale,
    ] as const;
    ctx.beginPath();
    ctx.rect(0, 0, WIDTH, HEIGHT);
    ctx.rect(...box);
    // A colour the canvas cannot parse is ignored, leaving the fallback set just before.
    ctx.fillStyle = "rgba(240, 242, 245, 0.6)";
    ctx.fillStyle = style.getPropertyValue("--xy-minimap-mask-background-color").trim();
    ctx.fill("evenodd");
    ctx.strokeStyle = "#6b7280";
    ctx.strokeStyle = style.getPropertyValue("--xy-minimap-mask-stroke-color").trim();
    ctx.lineWidth = 1.5;
    ctx.strokeRect(...box);
  });

  /** Centres the view on the layout point under the pointer. */
  const centreAt = (event: PointerEvent<HTMLCanvasElement>) => {
    const box = event.currentTarget.getBoundingClientRect();
    const x = (event.clientX - box.left - offsetX) / scale;
    const y = (event.clientY - box.top - offsetY) / scale;
    void flow.setCenter(x, y, { zoom });
  };
  const onWheel = (event: WheelEvent<HTMLCanvasElement>) => {
    void (event.deltaY < 0 ? flow.zoomIn() : flow.zoomOut());
  };

  return (
    <Panel position="bottom-right" className="react-flow__minimap graph-minimap">
      <canvas
        ref={canvas}
        role="img"
        aria-label={ariaLabel}
        style={{ width: WIDTH, height: HEIGHT, display: "block", cursor: "pointer" }}
        onPointerDown={(event) => {
          event.currentTarget.setPointerCapture(event.pointerId);
          centreAt(event);
        }}
        onPointerMove={(event) => {
          if (event.buttons & 1) centreAt(event);
        }}
        onWheel={onWheel}
      />
    </Panel>
  );
}

function sameSize(a: { width: number; height: number }, b: { width: number; height: number }) {
  return a.width === b.width && a.height === b.height;
}
