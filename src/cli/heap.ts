import { setFlagsFromString } from "node:v8";

/**
 * V8's heap settings for the command line, set as the process starts (this
 * module is main's first import, evaluated before any other).
 *
 * A batch keeps a small live heap (about 25 MB at any size, issue 10), but by
 * default V8 lets its young generation grow to 16 MB semi-spaces and its old
 * generation fill with several times the live heap in garbage before a full
 * collection: a 20,000-job batch peaked at 223 MB RSS. Keeping the young
 * generation at its starting size and letting the old one grow 10% past what
 * the last full collection kept bounds that garbage; d-scale in
 * bench/RESULTS.md measures both, with CPU per job (more, smaller collections
 * of a small heap cost about as much as fewer, larger ones). At 20% the
 * committed heap crept up through a 20,000-job batch (55 → 63 MB while the
 * live heap stayed 36–42 MB) and the process peaked at 149.1 and 150.9 MB in
 * two runs, against the 150 MB target; at 10%, at 141.5 and 148.4 MB, with
 * engine CPU per job 4.39 and 4.38 ms (4.85 and 4.17 ms at 20%).
 *
 * Both flags are read by V8 at each collection, so setting them here works
 * (unlike --max-semi-space-size, which only a node flag can set). Heap flags
 * the user gives node (NODE_OPTIONS or the command line) are left to win.
 */
const SETTINGS = ["--semi-space-growth-factor=1", "--heap-growing-percent=10"];

const given = `${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`;
if (!/semi-space|heap-growing|max-old-space|optimize-for-size/.test(given)) {
  for (const setting of SETTINGS) setFlagsFromString(setting);
}
