"use client";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import { useQuery } from "@tanstack/react-query";
import { authClient } from "./auth-client.ts";
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
];

export function Nav({ user }: { user: { email: string; role: string } }) {
  const pathname = usePathname();
  const router = useRouter();
  const trpc = useTRPC();
  const health = useQuery(trpc.health.queryOptions());
  return (
    <aside className="sidebar">
      <div className="brand">
        Strata<small>workspace snapshot lineage</small>
      </div>
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
      <div className="footer-health" data-testid="health">
        {health.data
          ? `${health.data.database} · ${health.data.migration ?? "no migrations"}`
          : health.isError
            ? "catalog unreachable"
            : "…"}
      </div>
    </aside>
  );
}
