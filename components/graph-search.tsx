"use client";
// Search the repository's graph by snapshot id, commit, branch, baseline ref or work context,
// and jump to a hit: the page selects it and asks the server to draw it on its own.
import { useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { useTRPC } from "./trpc.tsx";

export function GraphSearch({ repositoryId, onJump }: { repositoryId: string; onJump: (id: string) => void }) {
  const trpc = useTRPC();
  const [text, setText] = useState("");
  const [asked, setAsked] = useState("");
  const resultsId = useId();
  const search = useQuery({
    ...trpc.dashboard.graphSearch.queryOptions({ repositoryId, text: asked }),
    enabled: asked.length > 0,
  });
  const hits = asked ? (search.data ?? []) : [];
  return (
    <div className="graph-search">
      <form
        role="search"
        aria-label="Find in the graph"
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(text.trim());
        }}
      >
        <label>
          Find a snapshot
          <input
            type="search"
            value={text}
            placeholder="id, commit, branch or work context"
            aria-controls={resultsId}
            onChange={(e) => setText(e.target.value)}
          />
        </label>
        <button type="submit">Find</button>
      </form>
      <div id={resultsId} aria-live="polite">
        {asked && search.isFetching && !search.data ? <p className="muted">Searching…</p> : null}
        {asked && search.data && hits.length === 0 ? <p className="muted">Nothing matches “{asked}”.</p> : null}
        {hits.length > 0 ? (
          <ul className="graph-search-hits" aria-label="Search results">
            {hits.map((h) => (
              <li key={h.id}>
                <button
                  type="button"
                  onClick={() => {
                    onJump(h.id);
                    setAsked("");
                  }}
                >
                  <strong>{h.label}</strong>{" "}
                  <span className="muted">
                    {h.class}, {h.state}
                  </span>{" "}
                  <span className="muted">
                    ({h.matched} <span className="mono">{h.text}</span>)
                  </span>
                </button>
              </li>
            ))}
          </ul>
        ) : null}
      </div>
    </div>
  );
}
