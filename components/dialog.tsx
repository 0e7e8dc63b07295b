"use client";
// A modal dialog on the native <dialog> element: showModal() traps focus and makes the page
// behind inert, Escape closes it, and the title and description label it for screen readers.
import { useEffect, useId, useRef, type ReactNode } from "react";

export function Dialog({
  open,
  title,
  onClose,
  children,
  description,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  description?: ReactNode;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const descriptionId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      aria-describedby={description ? descriptionId : undefined}
      onClose={onClose}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      {open ? (
        <>
          <h2 id={titleId}>{title}</h2>
          {description ? (
            <div id={descriptionId} className="dialog-description">
              {description}
            </div>
          ) : null}
          {children}
        </>
      ) : null}
    </dialog>
  );
}
