/**
 * A failure that already knows what to tell the caller: the route answers it 503 with its
 * message (src/http/errors.ts, orUnavailable). `logged`: said in the logs where it happened
 * already (a flood of one failure is logged once every few seconds there, not once each).
 */
export class Unavailable extends Error {
  readonly logged: boolean;

  constructor(message: string, options: { cause?: unknown; logged?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.logged = options.logged ?? false;
  }
}
