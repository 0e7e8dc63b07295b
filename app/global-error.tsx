"use client";
// The last resort: the root layout itself failed. It replaces the whole document, so it brings
// its own <html> and the stylesheet.
import "./globals.css";

export default function GlobalError({ error }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <html lang="en">
      <body>
        <div className="signin">
          <main className="panel signin-card problem" role="alert" aria-labelledby="global-error-title">
            <div className="brand-dark">Strata</div>
            <h1 id="global-error-title">Strata could not be shown</h1>
            <p>
              The dashboard failed to start in this tab
              {error.digest ? ` (reference ${error.digest}, in the server log)` : ""}. Reload to try again.
            </p>
            <div className="problem-actions">
              {/* A full load: the app around this page is what failed. */}
              <a href="/repositories">Reload the dashboard</a>
            </div>
          </main>
        </div>
      </body>
    </html>
  );
}
