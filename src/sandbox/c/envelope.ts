/**
 * spec C: every answer is `{ ErrCode, ErrMsg, Resp }`; 0 is success. The
 * spec names 500044, 500090 and 500069 and says other codes, and the HTTP
 * status that accompanies an error envelope, are not shown. The sandbox's
 * own codes are below; by default every envelope, error or not, comes with
 * HTTP 200, so a client must read ErrCode (option `errorHttpStatus:
 * "by-error"` maps them to 4xx/5xx instead). On an error, `Resp` is `{}`.
 */
export const C_ERR = {
  ok: 0,
  /** spec C: the account already holds its full quota of generating videos. */
  concurrentLimit: 500044,
  /** spec C: insufficient balance. */
  insufficientBalance: 500090,
  /** spec C: not a quota error; retry with a longer delay and jitter. */
  retryLater: 500069,
  /** Sandbox's choice: API-KEY missing or unknown. */
  invalidApiKey: 400010,
  /** Sandbox's choice: Ai-trace-id missing or not a UUID. */
  invalidTraceId: 400011,
  /** Sandbox's choice: a body field is missing or has a value outside the accepted set (ErrMsg names it). */
  invalidParameter: 400012,
  /** Sandbox's choice: no such video_id for this key. */
  videoNotFound: 400013,
} as const;

export type CErrCode = (typeof C_ERR)[keyof typeof C_ERR];

/** The HTTP status used with option `errorHttpStatus: "by-error"`. */
const HTTP_STATUS_BY_ERR_CODE: Record<CErrCode, number> = {
  0: 200,
  500044: 429,
  500090: 402,
  500069: 503,
  400010: 401,
  400011: 400,
  400012: 400,
  400013: 404,
};

export type CErrorHttpStatus = "always-200" | "by-error";

export interface CEnvelope<Resp extends object = object> {
  ErrCode: number;
  ErrMsg: string;
  Resp: Resp;
}

export class CApiError extends Error {
  constructor(
    readonly errCode: CErrCode,
    message: string,
  ) {
    super(message);
    this.name = "CApiError";
  }

  envelope(): CEnvelope {
    return { ErrCode: this.errCode, ErrMsg: this.message, Resp: {} };
  }

  httpStatus(mode: CErrorHttpStatus): number {
    return mode === "by-error" ? HTTP_STATUS_BY_ERR_CODE[this.errCode] : 200;
  }
}

export function success<Resp extends object>(resp: Resp): CEnvelope<Resp> {
  return { ErrCode: C_ERR.ok, ErrMsg: "success", Resp: resp };
}
