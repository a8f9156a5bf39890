import { z } from "zod";

/** spec A create response: the task id is a string that starts with `cgt-`. */
export const ATaskId = z.string().max(256).regex(/^cgt-[^\s/?#]+$/);

export const CreateAnswer = z.looseObject({ id: ATaskId });

/** spec A Limits: the task lookup window is the most recent 7 days; an older id no longer exists. */
export const A_LOOKUP_WINDOW_MS = 7 * 24 * 3_600_000;
