"use client";
// What a page shows when it cannot show what was asked for: a title that says what went wrong in
// a person's words, the server's message and hint, and a way on (retry, or back to a list).
import Link from "next/link";
import { useId, type ReactNode } from "react";
import { isCatalogUnavailable, isServerUnreachable } from "./connection.ts";

interface Explained {
  title: string;
  body: ReactNode;
  retry: boolean;
}

/** The StrataError the API sent with a failed call, when it sent one. */
function strataOf(error: unknown): { code?: string; message?: string; hint?: string | null } | null {
  const data = (error as { data?: { strata?: unknown; code?: unknown } | null } | null)?.data;
  return (data?.strata as { code?: string; message?: string; hint?: string | null } | null | undefined) ?? null;
}

/** What the failed call reads, in a person's words, from the procedure's path. */
const NOUNS: Record<string, string> = {
  "dashboard.snapshot": "snapshot",
  "dashboard.graph": "repository",
  "dashboard.repositoryPool": "repository",
};

function explain(error: unknown, wanted: string | undefined): Explained {
  const path = (error as { data?: { path?: unknown } | null } | null)?.data?.path;
  const what = wanted ?? (typeof path === "string" ? NOUNS[path] : undefined) ?? "page";
  const message = error instanceof Error ? error.message : String(error);
  if (isServerUnreachable(error))
    return {
      title: "Server unreachable",
      body: "Strata does not answer right now. This page tries again by itself and shows once it is back.",
      retry: true,
    };
  if (isCatalogUnavailable(error))
    return {
      title: "Catalog unavailable",
      body: "The catalog database cannot be reached right now. This page tries again by itself.",
      retry: true,
    };
  const strata = strataOf(error);
  const httpStatus = (error as { data?: { httpStatus?: unknown } | null } | null)?.data?.httpStatus;
  const detail = (
    <>
      {strata?.message ?? message}
      {strata?.hint ? <> {strata.hint}</> : null}
    </>
  );
  if (strata?.code === "NOT_FOUND" || httpStatus === 404)
    return {
      title: `No such ${what}`,
      body: (
        <>
          The catalog has no {what} at this address. {detail}
        </>
      ),
      retry: false,
    };
  if (strata?.code === "INVALID_INPUT" || httpStatus === 400)
    return {
      title: `Not a ${what} address`,
      body: <>This address does not name a {what}: check the link you followed.</>,
      retry: false,
    };
  if (strata?.code === "UNAUTHORIZED" || httpStatus === 401)
    return {
      title: "Signed out",
      body: (
        <>
          Your session has ended. <Link href="/signin">Sign in again</Link>.
        </>
      ),
      retry: false,
    };
  if (strata?.code === "FORBIDDEN" || httpStatus === 403)
    return { title: "Not allowed", body: <>Your role may not see this. {detail}</>, retry: false };
  return { title: `Could not load this ${what}`, body: detail, retry: true };
}

/** A page-sized error: what went wrong, and a retry and a way back to the lists. */
export function ErrorPanel({
  error,
  what,
  onRetry,
  headingLevel = 2,
}: {
  error: unknown;
  /** What the page shows ("snapshot"), for titles like "No such snapshot"; else read from the failed call. */
  what?: string;
  onRetry?: () => void;
  headingLevel?: 1 | 2;
}) {
  const { title, body, retry } = explain(error, what);
  const titleId = useId();
  const Heading = headingLevel === 1 ? "h1" : "h2";
  return (
    <section className="panel problem" role="alert" aria-labelledby={titleId} data-testid="error-panel">
      <Heading id={titleId}>{title}</Heading>
      <p>{body}</p>
      <div className="problem-actions">
        {retry && onRetry ? (
          <button type="button" className="primary" onClick={onRetry}>
            Retry
          </button>
        ) : null}
        <Link href="/repositories">Repositories</Link>
        <Link href="/snapshots">Snapshots</Link>
      </div>
    </section>
  );
}
