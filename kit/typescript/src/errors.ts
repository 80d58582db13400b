/**
 * The outcomes of a request that got no answer from the owner's app. Each
 * is an Error class, one per thing that can have happened, so that an app
 * never reads Delta's guarantee back from a sentence:
 *
 * - {@link NothingSent}: nothing of the request left this computer (no
 *   road, a connect that failed, an unknown peer, a wrong token). Safe to
 *   make again.
 * - {@link NotCarriedOut}: it reached the owner, whose Delta proved its app
 *   did not act. Safe to make again. `NothingSent` is a kind of it.
 * - {@link Unavailable}: no answer and no promise either way; only a read
 *   (safe to ask again) is ever told this. Both above are kinds of it.
 * - {@link OutcomeUnknown}: a call left and no answer came. Delta never
 *   sends it again; it asks the owner by the request id until it knows, and
 *   `Client.waitSettled` waits for that.
 * - {@link Conflict}: the request id is in use for another request.
 * - {@link BadInput}: the request was malformed (Delta's `bad_request`, or
 *   the kit's own check, `status` 0). Nothing was sent.
 * - {@link DeltaDown}: this computer's Delta is not running, or the
 *   listener where it should be is not it ({@link NotDelta}). Nothing was sent.
 * - {@link Cut}: an answer broke off before its end; what came is not whole.
 * - {@link APIError}: Delta refused a request of its own API.
 *
 * @module
 */

/** The base of every outcome that is not the owner's answer. */
export class DeltaError extends Error {
  /** Delta's (or the kit's) words on what happened. */
  readonly detail: string;
  constructor(detail: string, message?: string) {
    super(message ?? detail);
    this.detail = detail;
    this.name = new.target.name;
  }
}

/** What Delta says of an answer it made itself. */
export interface UnavailableFields {
  /** Delta's `X-Delta-Outcome` (`unavailable`, `not_found`, `forbidden`, `timeout`, …). */
  outcome: string;
  /** The HTTP status of Delta's answer (0: none came). */
  status: number;
  requestId?: string;
  peer?: string;
  road?: string;
  /** Delta's `"sent": false`. */
  nothingSent?: boolean;
  /** Delta's `"carried_out": false` (or nothing was sent). */
  notCarriedOut?: boolean;
}

/**
 * No answer came from the owner's app. `nothingSent` and `notCarriedOut`
 * are Delta's guarantee fields; the subclasses {@link NothingSent} and
 * {@link NotCarriedOut} are thrown when they hold.
 */
export class Unavailable extends DeltaError {
  readonly outcome: string;
  readonly status: number;
  readonly requestId: string;
  readonly peer: string;
  readonly road: string;
  readonly nothingSent: boolean;
  readonly notCarriedOut: boolean;
  constructor(detail: string, f: UnavailableFields) {
    super(detail, `${f.outcome}: ${detail}`);
    this.outcome = f.outcome;
    this.status = f.status;
    this.requestId = f.requestId ?? "";
    this.peer = f.peer ?? "";
    this.road = f.road ?? "";
    this.nothingSent = f.nothingSent ?? false;
    this.notCarriedOut = (f.notCarriedOut ?? false) || this.nothingSent;
  }
}

/** It was certainly not carried out: the owner's Delta proved its app did
 * not act, or nothing was sent. Safe to make again. */
export class NotCarriedOut extends Unavailable {}

/** Nothing of the request left this computer. Safe to make again. */
export class NothingSent extends NotCarriedOut {}

/**
 * The call left and no complete answer came, so nobody knows yet whether
 * the owner acted. Delta never sends it again: it keeps it in its journal
 * and asks the owner by `requestId` until it knows (`whatDeltaDoes` says so
 * in words). `Client.waitSettled(requestId)` waits for that.
 */
export class OutcomeUnknown extends DeltaError {
  readonly requestId: string;
  readonly peer: string;
  readonly whatDeltaDoes: string;
  constructor(detail: string, requestId: string, peer = "") {
    super(detail, `outcome unknown (request id ${requestId}): ${detail}`);
    this.requestId = requestId;
    this.peer = peer;
    const who = peer || "the owner";
    this.whatDeltaDoes =
      `Delta never sends it again; it keeps the call in its journal and asks ${who} by request id ` +
      `${requestId} until it knows whether it was carried out, or until a person settles it (delta show ${requestId})`;
  }
}

/** The request id is in use on this computer for another request (another
 * method, path or body). Nothing was sent. */
export class Conflict extends DeltaError {
  readonly requestId: string;
  readonly nothingSent = true;
  constructor(detail: string, requestId: string) {
    super(detail, `conflict (request id ${requestId}): ${detail}`);
    this.requestId = requestId;
  }
}

/** The request was malformed: Delta refused it (`bad_request`), or the kit
 * did before asking Delta (`status` 0). It was not carried out.
 * `nothingSent` is true unless some of it had left: a streamed call whose
 * body grew past this computer's max_call_bytes is cut there, after its
 * first bytes left and before its owner could have given it to its app
 * (413). */
export class BadInput extends DeltaError {
  readonly status: number;
  readonly outcome: string;
  readonly requestId: string;
  readonly nothingSent: boolean;
  readonly notCarriedOut = true;
  constructor(detail: string, status = 0, requestId = "", nothingSent = true) {
    super(detail, `bad input: ${detail}`);
    this.status = status;
    this.outcome = "bad_request";
    this.requestId = requestId;
    this.nothingSent = nothingSent;
  }
}

/** Where a down Delta was looked for. */
export interface DownFields {
  stateDir?: string;
  url?: string;
  requestId?: string;
}

/** This computer's Delta is not running (or did not take the connection).
 * Nothing was sent. */
export class DeltaDown extends DeltaError {
  readonly stateDir: string;
  readonly url: string;
  /** The call's id, when a call was refused so. */
  requestId: string;
  readonly nothingSent = true;
  constructor(detail: string, f: DownFields = {}) {
    let where = f.stateDir ? `state folder ${f.stateDir}` : "no state folder";
    if (f.url) where += `, at ${f.url}`;
    super(detail, `Delta is not running (${where}): ${detail}; nothing was sent`);
    this.stateDir = f.stateDir ?? "";
    this.url = f.url ?? "";
    this.requestId = f.requestId ?? "";
  }
}

/** The listener named in local.json is not this folder's Delta (a process
 * that took a dead Delta's port): it could not prove it holds the folder's
 * token, so neither the token nor the request was sent to it. */
export class NotDelta extends DeltaDown {
  readonly addr: string;
  readonly why: string;
  constructor(addr: string, why: string, stateDir = "") {
    super(`the listener at ${addr} is not this folder's Delta (${why}); the token and the request were not sent to it`,
      { stateDir, url: `http://${addr}` });
    this.addr = addr;
    this.why = why;
  }
}

/** An answer broke off before its end and could not be continued: the
 * `read` bytes that came are not the whole answer (`total` is its length,
 * -1 if it was not announced). */
export class Cut extends DeltaError {
  readonly read: number;
  readonly total: number;
  constructor(read: number, total: number, cause: string) {
    super(total >= 0
      ? `the answer broke off after ${read} of its ${total} bytes: ${cause}; what came is not the whole answer`
      : `the answer broke off after ${read} bytes: ${cause}; what came is not the whole answer`);
    this.read = read;
    this.total = total;
  }
}

/** Delta refused a request of its own API: `outcome` and `detail` say why. */
export class APIError extends DeltaError {
  readonly status: number;
  readonly outcome: string;
  constructor(detail: string, status: number, outcome: string) {
    super(detail, `${outcome}: ${detail}`);
    this.status = status;
    this.outcome = outcome;
  }
}

/** An outcome in the words of the kits' shared contract table
 * (kit/contract/outcomes.json): answer, nothing_sent, not_carried_out,
 * unavailable, outcome_unknown, conflict, bad_input, delta_down, cut. */
export function outcomeType(e: unknown): string {
  if (e === null || e === undefined) return "answer";
  if (e instanceof OutcomeUnknown) return "outcome_unknown";
  if (e instanceof Conflict) return "conflict";
  if (e instanceof BadInput) return "bad_input";
  if (e instanceof NothingSent) return "nothing_sent";
  if (e instanceof NotCarriedOut) return "not_carried_out";
  if (e instanceof Unavailable) return "unavailable";
  if (e instanceof DeltaDown) return "delta_down";
  if (e instanceof Cut) return "cut";
  return "other";
}
