"use client";
// Two snapshots of one repository compared: two pickers (ids, pasted ids or snapshot links), the
// files that differ with their change and sizes, and each text file's unified diff with added and
// removed lines coloured. Binary files are named with their sizes; secrets and content the catalog
// does not hold are said, never guessed.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "~/server/trpc/root.ts";
import { binaryChangeText, unshownContentText } from "~/server/domain/snapshot-diff.ts";
import { QueryView, ShortId, StateBadge } from "./query-view.tsx";
import { useTRPC } from "./trpc.tsx";
import "./snapshot-diff-view.css";

type Diff = inferRouterOutputs<AppRouter>["dashboard"]["snapshotDiff"];
type FileDiff = Diff["files"][number];
type Side = Diff["from"];

/** The snapshot id in what was pasted: an id, or a link to a snapshot's page. */
function snapshotIdIn(text: string): string {
  const trimmed = text.trim();
  const fromLink = /\/snapshots\/([^/?#\s]+)/.exec(trimmed);
  return fromLink ? decodeURIComponent(fromLink[1]!) : trimmed;
}

function SideLabel({ side }: { side: Side }) {
  return (
    <span className="diff-side">
      <Link href={`/snapshots/${side.id}`}>
        {side.class === "checkpoint" ? `checkpoint #${side.sequence}` : "baseline"} <ShortId id={side.id} />
      </Link>{" "}
      <StateBadge state={side.state} />
      <span className="muted">
        {" "}
        {side.workContextId ? `${side.workContextId} · ` : ""}
        {side.head ? `HEAD ${side.head.slice(0, 12)}` : "no HEAD recorded"}
      </span>
    </span>
  );
}

function changeCell(f: FileDiff): string {
  const unshown = unshownContentText(f);
  if (unshown !== null) return unshown;
  return f.change === "mode" ? `mode ${f.oldMode} → ${f.newMode}` : `+${f.additions} −${f.deletions}`;
}

interface DiffRow {
  kind: "hunk" | "add" | "del" | "ctx" | "meta";
  text: string;
  oldNo: number | null;
  newNo: number | null;
}

/** The hunks' lines with their line numbers on each side. */
function diffRows(diff: string): DiffRow[] {
  const rows: DiffRow[] = [];
  let oldNo = 0;
  let newNo = 0;
  for (const line of diff.replace(/\n$/, "").split("\n")) {
    const header = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (header) {
      oldNo = Number(header[1]);
      newNo = Number(header[2]);
      // A side with no lines names the line before; the next line is one more.
      if (line.includes(",0 +")) oldNo += 1;
      if (/\+\d+,0 @@/.test(line)) newNo += 1;
      rows.push({ kind: "hunk", text: line, oldNo: null, newNo: null });
    } else if (line.startsWith("+")) {
      rows.push({ kind: "add", text: line, oldNo: null, newNo: newNo++ });
    } else if (line.startsWith("-")) {
      rows.push({ kind: "del", text: line, oldNo: oldNo++, newNo: null });
    } else if (line.startsWith("\\")) {
      rows.push({ kind: "meta", text: line, oldNo: null, newNo: null });
    } else {
      rows.push({ kind: "ctx", text: line, oldNo: oldNo++, newNo: newNo++ });
    }
  }
  return rows;
}

function UnifiedDiff({ f }: { f: FileDiff }) {
  if (f.content === "binary") return <p className="diff-note">Binary file: {binaryChangeText(f)}. Not shown.</p>;
  if (f.content === "denied") return <p className="diff-note">A secret path: its content is never shown.</p>;
  if (f.content === "not-held") return <p className="diff-note">Content not held.</p>;
  if (!f.diff) return <p className="diff-note">No line changed.</p>;
  return (
    // Focusable, so a keyboard can scroll a long line into view.
    <div className="diff-scroll" tabIndex={0} role="group" aria-label={`Diff of ${f.path}`}>
      <table className="diff-table">
        <caption className="diff-hidden">Unified diff of {f.path}</caption>
        <thead className="diff-hidden">
          <tr>
            <th scope="col">Old line</th>
            <th scope="col">New line</th>
            <th scope="col">Change</th>
          </tr>
        </thead>
        <tbody>
          {diffRows(f.diff).map((r, n) => (
            <tr key={n} className={`diff-${r.kind}`}>
              <td className="diff-no">{r.oldNo ?? ""}</td>
              <td className="diff-no">{r.newNo ?? ""}</td>
              <td className="diff-text">{r.text}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function anchorOf(path: string): string {
  return `file-${encodeURIComponent(path).replace(/%/g, "_")}`;
}

function DiffResult({ d }: { d: Diff }) {
  return (
    <>
      <section className="panel section" aria-labelledby="diff-sides">
        <h2 id="diff-sides">
          <Link href={`/repositories/${d.repository.id}`}>{d.repository.name ?? d.repository.identity}</Link>
        </h2>
        <dl className="facts">
          <dt>From</dt>
          <dd>
            <SideLabel side={d.from} />
          </dd>
          <dt>To</dt>
          <dd>
            <SideLabel side={d.to} />
          </dd>
          <dt>Changed</dt>
          <dd data-testid="diff-stat">
            {d.identical
              ? "nothing: both hold the same tree"
              : `${d.stat.files} file(s): ${d.stat.added} added, ${d.stat.modified} modified, ${d.stat.deleted} deleted · +${d.stat.additions} −${d.stat.deletions} lines`}
          </dd>
        </dl>
        {d.completeness !== "exact" || d.notes.length > 0 || d.cut.files > 0 || d.cut.diffs > 0 ? (
          <ul className="notice diff-notes" aria-label="What this comparison could not show">
            {d.notes.map((n) => (
              <li key={n}>{n}</li>
            ))}
            {d.cut.files > 0 ? (
              <li>
                {d.cut.files} more file(s) differ and are not listed (at most {d.limits.maxFiles}).
              </li>
            ) : null}
            {d.cut.diffs > 0 ? <li>{d.cut.diffs} file(s) have their diff cut (see each file).</li> : null}
          </ul>
        ) : null}
        {d.denied.length > 0 ? (
          <p className="muted">Left out of the captures as secrets, never compared: {d.denied.join(", ")}</p>
        ) : null}
      </section>
      {d.files.length > 0 ? (
        <section className="panel section" aria-labelledby="diff-files">
          <h2 id="diff-files">Files</h2>
          <table className="diff-files">
            <thead>
              <tr>
                <th scope="col">Path</th>
                <th scope="col">Change</th>
                <th scope="col">Lines or size</th>
              </tr>
            </thead>
            <tbody>
              {d.files.map((f) => (
                <tr key={f.path}>
                  <td className="mono">
                    <a href={`#${anchorOf(f.path)}`}>{f.path}</a>
                  </td>
                  <td>
                    <span className={`badge change-${f.change}`}>{f.change}</span>
                  </td>
                  <td>{changeCell(f)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
      {d.files.map((f) => (
        <section
          key={f.path}
          id={anchorOf(f.path)}
          className="panel section diff-file"
          aria-label={`${f.path}, ${f.change}`}
          data-testid="diff-file"
        >
          <h2 className="mono">
            {f.path} <span className={`badge change-${f.change}`}>{f.change}</span>
          </h2>
          {f.oldMode && f.newMode && f.oldMode !== f.newMode ? (
            <p className="muted">
              mode {f.oldMode} → {f.newMode}
            </p>
          ) : null}
          {f.note ? <p className="muted">{f.note}</p> : null}
          <UnifiedDiff f={f} />
        </section>
      ))}
    </>
  );
}

export function SnapshotDiffView({ from, to }: { from: string | null; to: string | null }) {
  const trpc = useTRPC();
  const router = useRouter();
  const [fromText, setFromText] = useState(from ?? "");
  const [toText, setToText] = useState(to ?? "");
  const query = useQuery({
    ...trpc.dashboard.snapshotDiff.queryOptions({ to: to ?? "", ...(from ? { from } : {}) }),
    enabled: Boolean(to),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const params = new URLSearchParams();
    const f = snapshotIdIn(fromText);
    const t = snapshotIdIn(toText);
    if (f) params.set("from", f);
    if (t) params.set("to", t);
    router.push(`/diff?${params.toString()}`);
  };
  const swap = () => {
    setFromText(toText);
    setToText(fromText);
  };
  const shownFrom = query.data?.from.id;
  return (
    <>
      <form className="panel diff-pickers" onSubmit={submit} aria-label="Snapshots to compare">
        <label>
          From
          <input
            name="from"
            value={fromText}
            placeholder={shownFrom && !from ? `its predecessor (${shownFrom.slice(0, 8)})` : "snapshot id or link"}
            onChange={(e) => setFromText(e.target.value)}
            autoComplete="off"
            spellCheck={false}
          />
        </label>
        <button type="button" className="diff-swap" onClick={swap} aria-label="Swap from and to">
          ⇄
        </button>
        <label>
          To
          <input
            name="to"
            value={toText}
            placeholder="snapshot id or link"
            onChange={(e) => setToText(e.target.value)}
            autoComplete="off"
            spellCheck={false}
            required
          />
        </label>
        <button type="submit">Compare</button>
      </form>
      {to ? (
        <QueryView query={query} isEmpty={() => false} empty={{ title: "", body: null }}>
          {(d) => <DiffResult d={d} />}
        </QueryView>
      ) : (
        <div className="panel empty" data-testid="empty-state">
          <h2>Choose two snapshots</h2>
          <p>
            Paste two snapshot ids (or links to their pages) of one repository. With only “To”, the snapshot is compared
            with its predecessor.
          </p>
        </div>
      )}
    </>
  );
}
