// Loaded with `node --import` into a process a benchmark measures (the built CLI): at exit it writes that
// process's own CPU time and peak RSS to the file named by BENCH_USAGE_FILE, so the benchmark reports the
// engine's process alone, not the benchmark's. The peak of the JavaScript heap is sampled beside it (every
// 250 ms), to tell memory the program holds from memory the runtime keeps.
import { writeFileSync } from "node:fs";

const file = process.env.BENCH_USAGE_FILE;
if (file) {
  let peakHeapBytes = 0;
  // BENCH_HEAP_TRACE=1: the heap every second as well, to see when the peak comes (validation, the run, the summary):
  // seconds since start, then the heap used and committed, RSS, external memory and the peak RSS so far, in MiB.
  const trace = process.env.BENCH_HEAP_TRACE ? [] : null;
  const startedAt = Date.now();
  let ticks = 0;
  let tracedPeakKb = 0;
  // The process's CPU time as it goes ([wall ms, CPU ms], every 250 ms): a benchmark splits it at a moment it
  // saw from outside (the provider's first request), telling start-up and validation from the engine's run.
  const cpuTrace = [];
  setInterval(() => {
    const cpu = process.cpuUsage();
    cpuTrace.push([Date.now(), (cpu.user + cpu.system) / 1000]);
    const heapUsed = process.memoryUsage().heapUsed;
    peakHeapBytes = Math.max(peakHeapBytes, heapUsed);
    if (trace) {
      // Every second, and at every sample where the peak RSS so far grew (to see when the peak comes, to 250 ms).
      const peakKb = process.resourceUsage().maxRSS;
      if (ticks++ % 4 === 0 || peakKb > tracedPeakKb) {
        const { rss, external, heapTotal } = process.memoryUsage();
        const mib = (bytes) => Math.round(bytes / 1048576);
        trace.push([((Date.now() - startedAt) / 1000).toFixed(2), mib(heapUsed), mib(heapTotal), mib(rss), mib(external), Math.round(peakKb / 1024)]);
      }
      tracedPeakKb = peakKb;
    }
  }, 250).unref();
  process.on("exit", () => {
    const usage = process.resourceUsage();
    writeFileSync(file, JSON.stringify({ userMs: usage.userCPUTime / 1000, systemMs: usage.systemCPUTime / 1000, maxRssKb: usage.maxRSS, peakHeapBytes, cpuTrace, ...(trace ? { heapTrace: trace } : {}) }));
  });
}
