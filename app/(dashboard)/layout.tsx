import { headers } from "next/headers";
import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { Nav } from "~/components/nav.tsx";
import { ViewerProvider } from "~/components/viewer.tsx";
import { getAuth, sessionUser } from "~/server/auth/dashboard-auth.ts";

export const dynamic = "force-dynamic";

export default async function DashboardLayout({ children }: { children: ReactNode }) {
  const user = await sessionUser(getAuth(), await headers());
  if (!user) redirect("/signin");
  return (
    <div className="shell">
      <Nav user={{ email: user.email, role: user.role }} />
      <main>
        <ViewerProvider viewer={{ email: user.email, role: user.role }}>{children}</ViewerProvider>
      </main>
    </div>
  );
}
