#!/usr/bin/env node
// The `strata` command. The CLI is TypeScript, run through tsx's loader.
import { register } from "tsx/esm/api";

register();
await import("./main.ts");
