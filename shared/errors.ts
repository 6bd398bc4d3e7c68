// Typed errors: handlers and middleware throw these; one mapper per protocol turns them into a response.
// Anything that is not an ApiError is an internal fault and reaches the client without detail.

export class ApiError extends Error {
  readonly code: number;
  readonly details: readonly string[];
  readonly messageCode: string | undefined;

  constructor(code: number, message: string, details: readonly string[] = [], messageCode?: string) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = details;
    this.messageCode = messageCode;
  }
}

export const badRequest = (message: string, details: readonly string[] = [], messageCode?: string) =>
  new ApiError(400, message, details, messageCode);

export const notFound = (details: readonly string[] = []) =>
  new ApiError(400, "Item does not exist or is inaccessible.", details, "CONT_0001");

export const noSuchResource = (details: readonly string[] = []) =>
  new ApiError(404, "Resource does not exist or is inaccessible.", details);

/** The 404 for a request no route (or sub-operation) answers: the method and path, cut short, and nothing more. */
export const nothingServed = (method: string, path: string) =>
  noSuchResource([`Nothing is served at ${method} ${path.slice(0, 200)}.`]);

export const forbidden = (details: readonly string[] = []) =>
  new ApiError(
    403,
    "You do not have permissions to access this resource or perform this operation.",
    details,
    "GWM_0003",
  );

export const sslRequired = (details: readonly string[] = ["This organization accepts HTTPS requests only."]) =>
  new ApiError(403, "SSL Required", details);

export const invalidToken = () => new ApiError(498, "Invalid token.", ["Invalid token."]);

export const tokenRequired = () => new ApiError(499, "Token Required", ["Token Required"], "GWM_0003");

export const methodNotAllowed = (detail = "This operation requires POST.") =>
  new ApiError(405, "Method not supported.", [detail]);

/**
 * An operation the service or layer does not offer (a tile-only map service's `export`, editing a read-only layer):
 * ArcGIS's own answer, its message and first detail, then what this one does offer.
 */
export const operationNotSupported = (why: string) =>
  new ApiError(400, "Requested operation is not supported by this service.", [
    "The requested capability is not supported.",
    why,
  ]);

export const tooLarge = (limit: number) =>
  new ApiError(413, "Request body too large.", [`The request body may hold at most ${limit} bytes.`]);

/** A stored record that breaks an invariant: a fault of ours, never the caller's, so it is answered as a 500. */
export class CorruptRecordError extends Error {
  constructor(what: string, problem: string) {
    super(`corrupt ${what}: ${problem}`);
    this.name = "CorruptRecordError";
  }
}

export interface ErrorBody {
  readonly error: {
    readonly code: number;
    readonly messageCode?: string;
    readonly message: string;
    readonly details: readonly string[];
  };
}

export const INTERNAL_ERROR: ErrorBody = {
  error: { code: 500, message: "An internal error occurred. It has been logged.", details: [] },
};

export function errorBody(err: ApiError): ErrorBody {
  return {
    error: {
      code: err.code,
      ...(err.messageCode ? { messageCode: err.messageCode } : {}),
      message: err.message,
      details: err.details,
    },
  };
}

/** RFC 6749 §5.2 error codes, answered by the OAuth endpoints with a real HTTP status (not an envelope). */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  | "access_denied"
  | "unsupported_response_type"
  | "server_error";

export class OAuthError extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;

  constructor(error: OAuthErrorCode, description: string) {
    super(description);
    this.name = "OAuthError";
    this.error = error;
    // A client that failed to authenticate is told so with 401 (RFC 6749 §5.2); everything else is a 400.
    this.status = error === "invalid_client" ? 401 : 400;
  }
}

/** A word with its indefinite article, by its first letter: "an imageCache", "a tileCache". */
export const withArticle = (word: string): string => `${/^[aeiou]/i.test(word) ? "an" : "a"} ${word}`;
