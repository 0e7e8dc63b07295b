import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { SignInForm } from "~/components/sign-in-form.tsx";
import { getAuth, sessionUser } from "~/server/auth/dashboard-auth.ts";

export const dynamic = "force-dynamic";
export const metadata = { title: "Sign in · Strata" };

export default async function SignInPage() {
  if (await sessionUser(getAuth(), await headers())) redirect("/repositories");
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
