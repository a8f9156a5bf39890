import { defineConfig } from "vitest/config";

/**
 * The tests mutation testing runs: those that run our code in this process
 * (core, engine, store, provider clients and validators, sandbox-backed engine
 * tests). The CLI end-to-end tests are left out: they run the code in child
 * processes, where a mutant is not switched on, so they could not kill one.
 *
 * MUTATE_TESTS (comma-separated globs) narrows the tests for a narrowed run:
 * `npm run mutate:core` mutates src/core against test/core alone, whose unit
 * tests take seconds where the engine suites take many minutes per pass.
 */
const ALL = ["test/core/**/*.test.ts", "test/engine/**/*.test.ts", "test/outputs/**/*.test.ts", "test/store/**/*.test.ts", "test/providers/**/*.test.ts", "test/library*.test.ts"];

export default defineConfig({
  test: {
    include: process.env.MUTATE_TESTS ? process.env.MUTATE_TESTS.split(",") : ALL,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
