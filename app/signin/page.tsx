import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { CatalogUnavailablePage } from "~/components/catalog-unavailable.tsx";
import { SignInForm } from "~/components/sign-in-form.tsx";
import { dashboardViewer, getAuth } from "~/server/auth/dashboard-auth.ts";

export const dynamic = "force-dynamic";
export const metadata = { title: "Sign in · Strata" };

export default async function SignInPage() {
  const viewer = await dashboardViewer(getAuth(), await headers());
  if (viewer.state === "signed-in") redirect("/repositories");
  if (viewer.state === "unavailable") return <CatalogUnavailablePage />;
  return (
    <div className="signin">
      <div className="panel signin-card">
        <div className="brand-dark">Strata</div>
        <h1>Sign in</h1>
        <p className="lede">Operators, support staff and admins sign in with the account `strata user create` made.</p>
        <SignInForm />
      </div>
    </div>
  );
}
