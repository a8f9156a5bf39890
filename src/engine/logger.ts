import { pino, type Logger } from "pino";
import { redactSecrets } from "../core/redact.js";

export type EngineLogger = Pick<Logger, "info" | "warn" | "error" | "debug">;

/**
 * A pino logger that never writes a credential: known header and field names
 * are censored by path, and every configured secret value is removed from
 * the final line whatever field it hides in.
 */
export function createLogger(options: { level?: string; secrets: () => string[]; destination?: NodeJS.WritableStream }): Logger {
  const destination = options.destination ?? process.stderr;
  const stream = {
    write(line: string) {
      destination.write(redactSecrets(line, options.secrets()));
    },
  };
  return pino(
    {
      level: options.level ?? "warn",
      redact: {
        paths: [
          "*.headers.authorization",
          "*.headers['x-key']",
          "*.headers['x-api-key']",
          "*.headers['api-key']",
          "apiKey",
          "*.apiKey",
          "clientSecret",
          "*.clientSecret",
          "token",
          "*.token",
        ],
        censor: "[redacted]",
      },
    },
    stream,
  );
}

export const silentLogger: EngineLogger = pino({ level: "silent" });
