import { MediagateError } from "../core/errors.js";

/** Reading a saved output failed for a reason other than its absence (a bucket that refuses the credentials, an endpoint that is down). */
export class OutputReadError extends MediagateError {
  constructor(
    readonly path: string,
    /** The service's error code (`AccessDenied`, …) or the system's (`ECONNREFUSED`, …). */
    readonly errno: string,
    message: string,
    options?: { cause?: unknown; code?: "output_unreadable" | "output_changed" },
  ) {
    // output_changed: the object was replaced while it was being read (its size, told first, no longer holds).
    super(options?.code ?? "output_unreadable", message, options);
  }
}
