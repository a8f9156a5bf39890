import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Two cores: keep parallelism modest so end-to-end timings stay honest.
    maxWorkers: 2,
    reporters: ["default"],
  },
});
