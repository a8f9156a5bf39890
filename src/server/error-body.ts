/**
 * The one shape of every error the server answers, whatever answers it (the
 * API, a webhook refusal, `/metrics`, `/readyz`, a file or stream of the
 * dashboard, a route that does not exist, a request Node's parser refused):
 * `{"error": {"code", "message", "field"?, "targets"?}}`. Codes are stable
 * snake_case words clients branch on; messages are sentences for people and
 * may change. Only the dashboard's pages answer HTML, for the browser that
 * shows them.
 */
export interface ErrorBody {
  error: { code: string; message: string; field?: string; targets?: Array<{ target: string; reasons: string[] }> };
}

export function errorBody(code: string, message: string, extra: Omit<ErrorBody["error"], "code" | "message"> = {}): ErrorBody {
  return { error: { code, message, ...extra } };
}
