import { When } from "./query-view.tsx";

interface PinHold {
  holder: string | null;
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
      <td>{pin.holder ?? "—"}</td>
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
