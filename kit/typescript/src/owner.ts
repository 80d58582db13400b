/**
 * For apps that own data: admit only requests forwarded by this computer's
 * Delta.
 *
 * An owner app listens on loopback, where any local process can reach it;
 * only Delta knows the forward secret it was given at registration
 * (`Client.registerApp`). Wrap the app's `node:http` handler:
 *
 * ```ts
 * const { secret } = await client.registerApp("notes", "http://127.0.0.1:8080");
 * http.createServer(ownerHandler(secret, (req, res, incoming) => { … })).listen(8080, "127.0.0.1");
 * ```
 *
 * A request without the secret, or with another, gets 403 and never
 * reaches the handler. An admitted call should finish and answer even when
 * its caller has stopped waiting: the owner's Delta records the answer for
 * the caller's reconciliation.
 *
 * @module
 */

import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

import { header, H } from "./wire.js";

/**
 * What Delta says of a request it forwarded. `requestId` names a call (""
 * for reads): a call arrives at most once under an id, so an app that keeps
 * the id with its effect can tell a person which call did what. `caller` is
 * the calling computer, `callerApp` the calling app; `deadline` is when
 * the caller stops waiting (ms since the epoch), 0 if none was given.
 */
export interface Incoming {
  requestId: string;
  caller: string;
  callerApp: string;
  deadline: number;
}

/** "" when got is the forward secret, else why the request is refused.
 * Compared in constant time. */
export function checkSecret(secret: string, got: string | undefined): string {
  if (!got) return "the request has no X-Delta-Forward-Secret: only Delta may call this app";
  const a = Buffer.from(got);
  const b = Buffer.from(secret);
  if (!secret || a.length !== b.length || !timingSafeEqual(a, b)) {
    return "X-Delta-Forward-Secret does not match: only this computer's Delta may call this app";
  }
  return "";
}

/** What Delta says of req: its request id, caller, calling app and deadline. */
export function incoming(req: IncomingMessage): Incoming {
  const t = Number(header(req.headers, H.timeout));
  return {
    requestId: header(req.headers, H.requestId),
    caller: header(req.headers, H.caller),
    callerApp: header(req.headers, H.app),
    deadline: Number.isFinite(t) && t > 0 ? Date.now() + t * 1000 : 0,
  };
}

/** A `node:http` handler that also gets what Delta says of the request. */
export type OwnerHandler = (req: IncomingMessage, res: ServerResponse, incoming: Incoming) => void | Promise<void>;

/**
 * Wraps handler so that it sees only requests carrying this app's forward
 * secret; any other gets 403 with a JSON body naming why. The result is a
 * `node:http` request listener (`http.createServer(ownerHandler(…))`).
 */
export function ownerHandler(secret: string, handler: OwnerHandler): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const why = checkSecret(secret, header(req.headers, H.secret) || undefined);
    if (why) {
      const body = JSON.stringify({ error: "forbidden", detail: why }) + "\n";
      res.writeHead(403, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
      res.end(body);
      req.resume();
      return;
    }
    Promise.resolve()
      .then(() => handler(req, res, incoming(req)))
      .catch((e: unknown) => {
        // The handler failed: end the exchange without a whole answer, so
        // that Delta does not take a half answer for the app's.
        res.destroy(e instanceof Error ? e : new Error(String(e)));
      });
  };
}
