import { maxHeaderSize, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { ApiError } from "./api/errors.js";

/**
 * What Node's HTTP parser refuses before Fastify sees a request: headers
 * over Node's limit (431), headers not received in time (408), anything it
 * cannot parse as HTTP (400). Node (and Fastify's default handler) would
 * write a body of their own; this writes the server's one error shape on the
 * socket, then closes it: the parser cannot read the rest of the connection.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A connection the client reset, or one already closed, has nobody to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const answer =
    error.code === "HPE_HEADER_OVERFLOW"
      ? new ApiError("headers_too_large", `the request's headers are larger than the server reads (${maxHeaderSize} bytes in all); send fewer or shorter headers`)
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? new ApiError("request_timeout", "the request's headers did not arrive in time; send the request again")
        : new ApiError("bad_request", "the request is not well-formed HTTP/1.1 and could not be read");
  const status = answer.status;
  const text = JSON.stringify(answer.body());
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // Destroyed once written: a client that never reads or closes does not keep the socket.
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`, () => socket.destroy());
}
