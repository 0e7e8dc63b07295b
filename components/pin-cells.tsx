import { When } from "./query-view.tsx";

interface PinHold {
  holder: string | null;
  purpose: string | null;
  createdAt: Date | string;
  expiresAt: Date | string | null;
  releasedAt: Date | string | null;
}

/** The holder, purpose, since, expires and released cells of a pin's table row. */
export function PinHoldCells({ pin }: { pin: PinHold }) {
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
      <td>
        <When at={pin.releasedAt} />
      </td>
    </>
  );
}
