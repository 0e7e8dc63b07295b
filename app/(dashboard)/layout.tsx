import { headers } from "next/headers";
import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { CatalogUnavailablePage } from "~/components/catalog-unavailable.tsx";
import { DashboardShell } from "~/components/dashboard-shell.tsx";
import { dashboardViewer, getAuth } from "~/server/auth/dashboard-auth.ts";

export const dynamic = "force-dynamic";

export default async function DashboardLayout({ children }: { children: ReactNode }) {
  const viewer = await dashboardViewer(getAuth(), await headers());
  // A session that could not be checked (catalog outage) is not signed out: show the outage and retry.
  if (viewer.state === "unavailable") return <CatalogUnavailablePage />;
  if (viewer.state === "signed-out") redirect("/signin");
  const { user } = viewer;
  return <DashboardShell viewer={{ email: user.email, role: user.role }}>{children}</DashboardShell>;
}
