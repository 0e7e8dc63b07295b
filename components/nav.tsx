"use client";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { useQuery } from "@tanstack/react-query";
import { useEffect, useId, useRef, useState, type KeyboardEvent } from "react";
import { authClient } from "./auth-client.ts";
import { useConnection } from "./connection.ts";
import { useTRPC } from "./trpc.tsx";

const LINKS = [
  { href: "/repositories", label: "Repositories" },
  { href: "/snapshots", label: "Snapshots" },
  { href: "/pins", label: "Pins" },
  { href: "/holds", label: "Live holds" },
  { href: "/restores", label: "Restores" },
  { href: "/degraded", label: "Degraded restores" },
  { href: "/gc", label: "Garbage collection" },
  { href: "/audit", label: "Audit log" },
  { href: "/api-docs", label: "API" },
];

/** How often the footer asks the server how it is (also how soon a stopped server is noticed). */
const HEALTH_POLL_MS = 15_000;

/** The footer's line: the connection as the latest call saw it, then the catalog the server reported. */
function HealthLine() {
  const trpc = useTRPC();
  const connection = useConnection();
  const health = useQuery({ ...trpc.health.queryOptions(), refetchInterval: HEALTH_POLL_MS });
  let text: string;
  if (connection === "unreachable") text = "server unreachable";
  else if (connection === "catalog-unavailable") text = "catalog unavailable";
  else if (health.isError && !health.isFetching) text = "health check failed";
  else if (health.data) text = `${health.data.database} · ${health.data.migration ?? "no migrations"}`;
  else text = "…";
  return (
    <div className="footer-health" data-testid="health" data-state={connection}>
      {text}
    </div>
  );
}

/**
 * The sidebar: the main navigation, who is signed in, and the catalog's health. On a narrow
 * screen it is a bar with a Menu button that shows and hides the rest (Escape closes it).
 */
export function Nav({ user }: { user: { email: string; role: string } }) {
  const pathname = usePathname();
  const router = useRouter();
  const [open, setOpen] = useState(false);
  const panelId = useId();
  const menuButton = useRef<HTMLButtonElement>(null);
  // A page opened from the menu closes it.
  useEffect(() => setOpen(false), [pathname]);
  function onKeyDown(event: KeyboardEvent<HTMLElement>) {
    if (event.key !== "Escape" || !open) return;
    setOpen(false);
    menuButton.current?.focus();
  }
  return (
    <aside className="sidebar" data-open={open} onKeyDown={onKeyDown}>
      <div className="sidebar-top">
        <div className="brand">
          Strata<small>workspace snapshot lineage</small>
        </div>
        <button
          ref={menuButton}
          type="button"
          className="menu-button"
          aria-expanded={open}
          aria-controls={panelId}
          onClick={() => setOpen((o) => !o)}
        >
          <span className="menu-icon" aria-hidden="true" />
          Menu
        </button>
      </div>
      <div className="sidebar-panel" id={panelId}>
        <nav aria-label="Main">
          <ul className="nav">
            {LINKS.map((link) => (
              <li key={link.href}>
                <Link href={link.href} aria-current={pathname.startsWith(link.href) ? "page" : undefined}>
                  {link.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="whoami" data-testid="whoami">
          <span>
            {user.email} · {user.role}
          </span>
          <button
            type="button"
            onClick={async () => {
              await authClient.signOut();
              router.replace("/signin");
              router.refresh();
            }}
          >
            Sign out
          </button>
        </div>
        <HealthLine />
      </div>
    </aside>
  );
}
