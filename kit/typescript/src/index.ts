/**
 * delta-kit: what a Node app (20+) uses to talk to its computer's Delta.
 *
 * Delta carries an app's requests to the person's other computers over the
 * best road at the moment, and sends writes ("calls") at most once. This
 * kit gives a TypeScript or JavaScript app what the Go kit gives a Go app:
 *
 * ```ts
 * import { Client, newRequestId, NotCarriedOut, OutcomeUnknown } from "delta-kit";
 *
 * const c = new Client();                            // DELTA_STATE_DIR, else the OS's state folder
 * const notes = await c.get("studio", "notes", "/notes");
 * const rid = newRequestId();                        // keep it with what the call is for, first
 * try {
 *   const a = await c.call("studio", "notes", "POST", "/notes", '{"text":"milk"}', { requestId: rid });
 *   console.log(a.status, a.body.toString());        // the owner app's own answer, any status
 * } catch (e) {
 *   if (e instanceof NotCarriedOut) console.log("not carried out:", e.detail);   // NothingSent is a kind of it
 *   else if (e instanceof OutcomeUnknown) console.log((await c.waitSettled(rid)).state);
 *   else throw e;
 * }
 * ```
 *
 * Owner apps check the forward secret with {@link ownerHandler}.
 *
 * @module
 */

export { Client, OPTIONS, Response, programName } from "./client.js";
export type { Answer, Body, CallOptions, ClientOptions, Progress, ReadOptions } from "./client.js";
export {
  APIError, BadInput, Conflict, Cut, DeltaDown, DeltaError, NotCarriedOut, NotDelta, NothingSent, OutcomeUnknown, Unavailable,
  outcomeType,
} from "./errors.js";
export type { DownFields, UnavailableFields } from "./errors.js";
export { checkSecret, incoming, ownerHandler } from "./owner.js";
export type { Incoming, OwnerHandler } from "./owner.js";
export { CallRecord, State, defaultStateDir, newRequestId } from "./wire.js";
export type { CallState, StoredAnswer } from "./wire.js";

/** The kit's version. */
export const VERSION = "0.1.0";
