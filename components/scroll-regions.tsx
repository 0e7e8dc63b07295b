"use client";
// A table or code block too wide for the screen scrolls inside its own box (globals.css). A box
// that scrolls must be reachable by keyboard, or its hidden columns are out of a keyboard user's
// reach: each one that overflows now is made a focusable region, and stops being one when it fits.
import { useEffect } from "react";

const CANDIDATES = "table, pre, .table-scroll, .section";

export function FocusableScrollRegions({ within }: { within: string }) {
  useEffect(() => {
    const root = document.getElementById(within);
    if (!root) return;
    let frame = 0;
    const update = () => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => {
        for (const el of root.querySelectorAll<HTMLElement>(CANDIDATES)) {
          const overflowX = getComputedStyle(el).overflowX;
          const scrolls = el.scrollWidth > el.clientWidth + 1 && (overflowX === "auto" || overflowX === "scroll");
          if (scrolls && !el.hasAttribute("tabindex")) {
            el.tabIndex = 0;
            el.dataset.scrollRegion = "";
          } else if (!scrolls && el.dataset.scrollRegion !== undefined) {
            el.removeAttribute("tabindex");
            delete el.dataset.scrollRegion;
          }
        }
      });
    };
    const observer = new MutationObserver(update);
    observer.observe(root, { childList: true, subtree: true });
    window.addEventListener("resize", update);
    update();
    return () => {
      cancelAnimationFrame(frame);
      observer.disconnect();
      window.removeEventListener("resize", update);
    };
  }, [within]);
  return null;
}
