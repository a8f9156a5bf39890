/**
 * One engine in a process of its own, so that a test can kill it with a real
 * SIGKILL at a chosen step (see engine-process.ts). It runs on a virtual clock
 * kept in step with the sandbox's, works on every job in the store, and lives
 * at most ENGINE_MAX_MS of real time.
 *
 * ENGINE_SLOW_WRITE makes the disk slow for result files whose path contains
 * that text: half the bytes go to a temporary file named as the real writer
 * names them, and the rest waits, so a kill lands mid-write.
 */
import { randomBytes } from "node:crypto";
import { open } from "node:fs/promises";
import { ScaledClock } from "../../src/core/clock.js";
import { configSecrets, loadConfig } from "../../src/core/config.js";
import { Engine } from "../../src/engine/engine.js";
import { localFolderOutputs, type OutputWriter } from "../../src/outputs/local-folder.js";
import { createProviderRegistry } from "../../src/providers/registry.js";
import { notificationPolicyOf, notifierOf } from "../../src/app/notifications.js";
import { openStore } from "../../src/store/open.js";

const scale = Number(process.env.ENGINE_TIME_SCALE ?? "1");
const virtualAt = Number(process.env.ENGINE_VIRTUAL_AT ?? Date.now());
const realAt = Number(process.env.ENGINE_REAL_AT ?? Date.now());
const maxMs = Number(process.env.ENGINE_MAX_MS ?? "60000");
const slowWrite = process.env.ENGINE_SLOW_WRITE ?? "";

setTimeout(() => process.exit(3), maxMs).unref();

const outputs: OutputWriter = {
  prepare: (folder) => localFolderOutputs.prepare(folder),
  removeStale: (folder, stem) => localFolderOutputs.removeStale(folder, stem),
  async write(path, bytes) {
    if (slowWrite && path.includes(slowWrite) && !path.endsWith(".json")) {
      const handle = await open(`${path}.tmp-${randomBytes(4).toString("hex")}`, "w");
      await handle.writeFile(bytes.subarray(0, Math.floor(bytes.length / 2)));
      await handle.sync();
      await handle.close();
      await new Promise((resolve) => setTimeout(resolve, maxMs));
    }
    await localFolderOutputs.write(path, bytes);
  },
};

const config = loadConfig({ env: process.env });
const providers = createProviderRegistry(config);
const store = await openStore(config.store);
store.setNotificationPolicy(notificationPolicyOf(config));
const secrets = () => [...configSecrets(config), ...[...providers.values()].flatMap((entry) => entry.adapter?.secrets?.() ?? [])];
const clock = new ScaledClock(scale, virtualAt + (Date.now() - realAt) * scale);
const engine = new Engine({ store, providers, secrets, clock, outputs, allowPrivateUrls: config.allowPrivateUrls, notifications: notifierOf(config) });
engine.start();
process.stdout.write(`ready ${engine.owner}\n`);
