import { headers } from "next/headers";
import Link from "next/link";
import { DashboardShell } from "~/components/dashboard-shell.tsx";
import { dashboardViewer, getAuth } from "~/server/auth/dashboard-auth.ts";

export const metadata = { title: "Page not found · Strata" };

/** Any address the app has no page for: inside the dashboard for a signed-in user, else on its own. */
export default async function NotFound() {
  const viewer = await dashboardViewer(getAuth(), await headers());
  if (viewer.state === "signed-in") {
    const { user } = viewer;
    return (
      <DashboardShell viewer={{ email: user.email, role: user.role }}>
        <section className="panel problem" aria-labelledby="not-found-title" data-testid="not-found">
          <p className="problem-code">404</p>
          <h1 id="not-found-title">Page not found</h1>
          <p>There is no page at this address: the link may be mistyped, or what it named is gone.</p>
          <div className="problem-actions">
            <Link href="/repositories">Repositories</Link>
            <Link href="/snapshots">Snapshots</Link>
            <Link href="/restores">Restores</Link>
          </div>
        </section>
      </DashboardShell>
    );
  }
  return (
    <div className="signin">
      <main className="panel signin-card problem" aria-labelledby="not-found-title" data-testid="not-found">
        <div className="brand-dark">Strata</div>
        <p className="problem-code">404</p>
        <h1 id="not-found-title">Page not found</h1>
        <p>There is no page at this address.</p>
        <div className="problem-actions">
          <Link href="/repositories">Go to the dashboard</Link>
          <Link href="/signin">Sign in</Link>
        </div>
      </main>
    </div>
  );
}
