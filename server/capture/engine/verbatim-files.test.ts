// Which files a restore must write verbatim, decided without running git: the attribute rules
// and the blob ids compared with a file's bytes.
import { describe, expect, it } from "vitest";
import { blobObjectId, convertsLineEndings, hasLineEndingInCr, mayConvertLineEndings } from "./verbatim-files.ts";

describe("attributes that convert line endings whatever the content", () => {
  it.each([
    [{ text: "set", eol: "unspecified", crlf: "unspecified" }, true],
    [{ text: "set", eol: "lf", crlf: "unspecified" }, true],
    [{ text: "unspecified", eol: "lf", crlf: "unspecified" }, true],
    [{ text: "unspecified", eol: "crlf", crlf: "unspecified" }, true],
    [{ text: "input", eol: "unspecified", crlf: "unspecified" }, true],
    [{ text: "unspecified", eol: "unspecified", crlf: "set" }, true],
    [{ text: "unspecified", eol: "unspecified", crlf: "input" }, true],
    // text=auto leaves a blob that has CRLF alone; -text and binary convert nothing.
    [{ text: "auto", eol: "lf", crlf: "unspecified" }, false],
    [{ text: "unset", eol: "lf", crlf: "unspecified" }, false],
    [{ text: "unspecified", eol: "unspecified", crlf: "unset" }, false],
    [{ text: "unspecified", eol: "unspecified", crlf: "unspecified" }, false],
    // text decides before the old crlf attribute.
    [{ text: "unset", eol: "unspecified", crlf: "set" }, false],
  ])("%o: %s", (attributes, converts) => {
    expect(convertsLineEndings(attributes)).toBe(converts);
  });

  it("finds attribute files that may convert line endings, and skips the others", () => {
    for (const text of [
      "* text eol=lf\n",
      "*.sh eol=lf\n",
      "*.bat crlf=input\n",
      "# x\n*.c text\n",
      "*.txt !text\n",
      "[attr]normal text eol=lf\n",
      "* text=auto\r\n*.sh text eol=lf\r\n",
    ]) {
      expect(mayConvertLineEndings(text), JSON.stringify(text)).toBe(true);
    }
    for (const text of [
      "",
      "*.psd filter=lfs diff=lfs merge=lfs -text\n",
      "* text=auto\n",
      "* text=auto eol=lf\n*.png binary\n",
      "*.png -text eol=lf\n",
      "*.bat -crlf\n",
      "# * text eol=lf\n",
      "*.md linguist-documentation\n",
    ]) {
      expect(mayConvertLineEndings(text), JSON.stringify(text)).toBe(false);
    }
  });

  it("finds a line ending in CR as git grep does", () => {
    expect(hasLineEndingInCr(Buffer.from("ab\r\ncd\n"))).toBe(true);
    expect(hasLineEndingInCr(Buffer.from("lone at the end\r"))).toBe(true);
    expect(hasLineEndingInCr(Buffer.from("a\rb\n"))).toBe(false);
    expect(hasLineEndingInCr(Buffer.alloc(0))).toBe(false);
  });
});

describe("blob ids", () => {
  it("computes a blob's id as git does, without filters", () => {
    // `printf 'ab\r\r\ncd\r\n' | git hash-object --stdin --no-filters`
    expect(blobObjectId(Buffer.from("ab\r\r\ncd\r\n"), "sha1")).toBe("3080922b3bbd17309e95c21e58afb53d559e2130");
    expect(blobObjectId(Buffer.alloc(0), "sha1")).toBe("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  });
});
