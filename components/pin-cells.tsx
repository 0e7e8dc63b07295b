import { When } from "./query-view.tsx";

interface PinHold {
  holder: string | null;
  /** The holder's name when it names an agent or user (server/audit/holder-names.ts). */
  holderName?: string | null;
  purpose: string | null;
  createdAt: Date | string;
  expiresAt: Date | string | null;
  releasedAt?: Date | string | null;
}

/**
 * The holder, purpose, since and expires cells of a pin's table row, and its released cell
 * unless the table lists only active pins (`released={false}`).
 */
export function PinHoldCells({ pin, released = true }: { pin: PinHold; released?: boolean }) {
  return (
    <>
      <td title={pin.holder ?? undefined}>{pin.holderName ?? pin.holder ?? "—"}</td>
      <td>{pin.purpose ?? "—"}</td>
      <td>
        <When at={pin.createdAt} />
      </td>
      <td>
        <When at={pin.expiresAt} />
      </td>
      {released && (
        <td>
          <When at={pin.releasedAt ?? null} />
        </td>
      )}
    </>
  );
}

/** A pin id: its kind ("restore", "support") and the start of the rest; the whole id on hover. */
export function PinId({ id }: { id: string }) {
  const colon = id.indexOf(":");
  const kind = colon > 0 ? id.slice(0, colon + 1) : "";
  const rest = colon > 0 ? id.slice(colon + 1) : id;
  return (
    <span className="mono" title={id}>
      {kind}
      {rest.length > 12 ? `${rest.slice(0, 8)}…` : rest}
    </span>
  );
}
