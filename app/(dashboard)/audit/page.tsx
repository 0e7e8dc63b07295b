import { AuditLogView } from "~/components/audit-log-view.tsx";

export const metadata = { title: "Audit log · Strata" };

export default function AuditLogPage() {
  return (
    <>
      <h1>Audit log</h1>
      <p className="lede">Every retirement, discarded restore and collection run: who did it, when, and why.</p>
      <AuditLogView />
    </>
  );
}
