// Loaded with `node --import` into a process a benchmark measures (the built CLI): at exit it writes that
// process's own CPU time and peak RSS to the file named by BENCH_USAGE_FILE, so the benchmark reports the
// engine's process alone, not the benchmark's. The peak of the JavaScript heap is sampled beside it (every
// 250 ms), to tell memory the program holds from memory the runtime keeps.
import { writeFileSync } from "node:fs";

const file = process.env.BENCH_USAGE_FILE;
if (file) {
  let peakHeapBytes = 0;
  setInterval(() => {
    peakHeapBytes = Math.max(peakHeapBytes, process.memoryUsage().heapUsed);
  }, 250).unref();
  process.on("exit", () => {
    const usage = process.resourceUsage();
    writeFileSync(file, JSON.stringify({ userMs: usage.userCPUTime / 1000, systemMs: usage.systemCPUTime / 1000, maxRssKb: usage.maxRSS, peakHeapBytes }));
  });
}
