"use client";
// Every time the dashboard shows: the reader's local time with its zone named, and UTC one click
// away (the choice holds for every time on every page, and is remembered in this browser). The
// server, and the first render in the browser, show UTC: the reader's zone is known only in the
// browser, so the switch to local time happens after hydration and never mismatches it.
import { useSyncExternalStore } from "react";

type Mode = "local" | "utc";

const STORAGE_KEY = "strata.time";
const listeners = new Set<() => void>();
let chosen: Mode | null = null;

function storedMode(): Mode {
  if (chosen) return chosen;
  try {
    chosen = window.localStorage.getItem(STORAGE_KEY) === "utc" ? "utc" : "local";
  } catch {
    chosen = "local";
  }
  return chosen;
}

function setMode(mode: Mode): void {
  chosen = mode;
  try {
    window.localStorage.setItem(STORAGE_KEY, mode);
  } catch {
    // A browser that refuses storage still switches for this page.
  }
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

const pad = (n: number) => String(n).padStart(2, "0");

/** "2026-12-02 03:14:05 UTC" */
function formatUtc(date: Date): string {
  return `${date.toISOString().replace("T", " ").slice(0, 19)} UTC`;
}

/** "2026-12-02 04:14:05 CET": the browser's local time and the short name of its zone. */
function formatLocal(date: Date): string {
  const zone =
    new Intl.DateTimeFormat(undefined, { timeZoneName: "short" })
      .formatToParts(date)
      .find((p) => p.type === "timeZoneName")?.value ?? "local";
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())} ${zone}`
  );
}

/** A point in time: local with its zone (UTC before hydration); a click shows every time in UTC, or back. */
export function LocalTime({ at }: { at: Date | string | number | null | undefined }) {
  // null on the server and while hydrating: the markup the server sent.
  const mode = useSyncExternalStore<Mode | null>(subscribe, storedMode, () => null);
  if (at === null || at === undefined) return <>—</>;
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return <>—</>;
  const utc = mode !== "local";
  const text = utc ? formatUtc(date) : formatLocal(date);
  const other = utc ? "local time" : "UTC";
  return (
    <button
      type="button"
      className="time"
      title={`Show every time in ${other}`}
      onClick={() => setMode(utc ? "local" : "utc")}
    >
      <time dateTime={date.toISOString()}>{text}</time>
    </button>
  );
}
