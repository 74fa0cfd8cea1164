import { constants } from 'node:http2';

/** A Node response that can be cut: node:http's, or node:http2's compatibility response. */
export interface CuttableResponse {
  destroy(): unknown;
  /** The HTTP/2 stream of a node:http2 compatibility response; node:http's has none. */
  readonly stream?: { close(code: number): unknown };
}

/**
 * Ends `res` so that the client sees a failure, not a complete response: for a response whose
 * status can no longer be told (its headers are out). Over HTTP/1.1 the connection is destroyed.
 * Over HTTP/2, `destroy()` resets the stream with NO_ERROR, which clients (node:http2's among them)
 * read as the end of the body, so the stream is reset with INTERNAL_ERROR, as Node does for a
 * response destroyed with an error.
 */
export function cutResponse(res: CuttableResponse): void {
  if (res.stream) res.stream.close(constants.NGHTTP2_INTERNAL_ERROR);
  else res.destroy();
}
