/**
 * A library user's process (see library.test.ts): opens mediagate on the
 * environment's store and sandbox, submits one D job, says `submitted`, waits
 * for a line on stdin (the test has taken the store away), closes with a
 * 1.5 s timeout, prints the outcome and returns without process.exit, so
 * the process ends only when nothing of mediagate holds it open.
 */
import { Mediagate } from "../../src/index.js";

const gate = await Mediagate.open({ env: process.env });
await gate.submit({ provider: "d", model: "gen-2-pro", input: { prompt: "cut off", width: 256, height: 256 } }, { ref: "cut-off" });
process.stdout.write("submitted\n");
await new Promise((resolve) => process.stdin.once("data", resolve));
process.stdin.destroy();
process.stdout.write(`closed ${await gate.close({ timeoutMs: 1_500 })}\n`);
