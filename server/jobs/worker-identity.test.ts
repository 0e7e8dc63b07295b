// A claim's process identity: written and read back, and judged dead only when that is certain
// (another boot, the pid gone or reused) — never a live process, never one of another host or
// pid namespace, never a claim in an older form.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { expect, it } from "vitest";
import { processStartTime } from "../git/process-start.ts";
import { currentWorkerIdentity, formatWorkerId, holderIsGone, parseWorkerId } from "./worker-identity.ts";

it("writes a claim that reads back as the same identity, and reads no other form", async () => {
  const self = await currentWorkerIdentity("build-7");
  expect(self).toMatchObject({ host: "build-7", pid: process.pid });
  expect(parseWorkerId(formatWorkerId(self))).toEqual(self);
  expect(parseWorkerId("build-7:1234:abcdef12")).toBeNull();
  expect(parseWorkerId("build-7|x|1|b|n|nonce")).toBeNull();
  const unknown = { ...self, start: null, boot: null, pidns: null };
  expect(parseWorkerId(formatWorkerId(unknown))).toEqual(unknown);
});

it("judges a holder gone only when it certainly no longer runs", async () => {
  const self = await currentWorkerIdentity("build-7");
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
  try {
    const pid = child.pid!;
    const start = await processStartTime(pid);
    const sibling = { ...self, pid, start, nonce: "sibling1" };
    // A live sibling of the same host, and another worker inside this very process.
    expect(await holderIsGone(sibling, self)).toBe(false);
    expect(await holderIsGone({ ...self, nonce: "another1" }, self)).toBe(false);
    // Its pid now belongs to a process that started at another time: the holder is gone.
    expect(await holderIsGone({ ...sibling, start: `${start}0` }, self)).toBe(true);
    // The machine rebooted since the claim.
    expect(await holderIsGone({ ...sibling, boot: "another-boot" }, self)).toBe(true);
    // What cannot be told is left to the lease: another host, another pid namespace, no boot id.
    expect(await holderIsGone({ ...sibling, start: "1", host: "build-8" }, self)).toBe(false);
    expect(await holderIsGone({ ...sibling, start: "1", pidns: "1" }, self)).toBe(false);
    expect(await holderIsGone({ ...sibling, start: "1", boot: null }, self)).toBe(false);

    child.kill("SIGKILL");
    await once(child, "exit");
    expect(await holderIsGone(sibling, self)).toBe(true);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});
