import { z } from "zod";

/**
 * spec C response envelope, for submit and result alike: ErrCode (0 is
 * success), ErrMsg, Resp. The HTTP status that accompanies an error
 * envelope is not shown, so every answer is decoded whatever its status.
 */
export const CEnvelope = z.object({
  ErrCode: z.number().int(),
  ErrMsg: z.string().nullish(),
  Resp: z.unknown().optional(),
});
export type CEnvelope = z.infer<typeof CEnvelope>;

/** Submit: `Resp.video_id` (string). */
export const SubmitResp = z.looseObject({ video_id: z.string().min(1).max(256) });

/** Result: `Resp.status` (integer) and, on success, `Resp.url` (string). */
export const ResultResp = z.looseObject({ status: z.number().int(), url: z.string().min(1).nullish() });

/** The envelope of an answer, or null when the body is not one (not JSON, or missing ErrCode). */
export function decodeEnvelope(text: string): CEnvelope | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = CEnvelope.safeParse(body);
  return parsed.success ? parsed.data : null;
}
