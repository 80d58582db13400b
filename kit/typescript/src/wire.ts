/**
 * What the kit reads of Delta: the state folder's files, the local proof,
 * and Delta's answers turned into outcomes. Plain functions, no state.
 *
 * @module
 */

import { createHmac, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { readFileSync, unlinkSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";

import { BadInput, Conflict, DeltaError, NotCarriedOut, NotDelta, NothingSent, OutcomeUnknown, Unavailable } from "./errors.js";

export const LOCAL_JSON = "local.json";
export const TOKEN_FILE = "local-token";
export const DIRECT_FILE = "direct.json";

/**
 * The local API's paths (kit/contract/paths.json, held to it by the
 * contract test): the one place this kit spells them. `path` fills one in.
 */
export const PATHS = {
  peer: "/v1/peers/{peer}/{app}",
  calls: "/v1/calls",
  call: "/v1/calls/{id}",
  call_action: "/v1/calls/{id}/{action}",
  receipts: "/v1/receipts",
  receipt: "/v1/receipts/{id}",
  receipt_action: "/v1/receipts/{id}/{action}",
  apps: "/v1/apps",
  app: "/v1/apps/{name}",
  forwards: "/v1/forwards",
  forward: "/v1/forwards/{peer}/{app}",
  status: "/v1/status",
  proof: "/v1/proof",
  login_link: "/v1/login-link",
  ping: "/v1/ping/{peer}",
  listening: "/v1/listening",
  peer_apps: "/v1/peer-apps/{peer}",
  pairing: "/v1/pairing",
  pair: "/v1/pairs/{name}",
  pair_request: "/v1/pair-requests/{id}/{action}",
  name: "/v1/name",
  metrics: "/metrics",
} as const;

/** The actions on a call or a receipt (POST PATHS.call_action). */
export const ACTIONS = ["ask", "dismiss", "settle", "forget", "check"] as const;

export const PROOF_PATH = PATHS.proof;

/** The local API's path called `name`, each parameter escaped as one path segment. */
export function path(name: keyof typeof PATHS, params: Record<string, string> = {}): string {
  let p: string = PATHS[name];
  for (const [k, v] of Object.entries(params)) p = p.replace(`{${k}}`, encodeURIComponent(v));
  if (p.includes("{")) throw new Error(`the local API's path ${name} (${PATHS[name]}) needs more than ${Object.keys(params).sort().join(", ")}`);
  return p;
}

/** Headers of Delta's local API (docs/protocol.md). */
export const H = {
  outcome: "x-delta-outcome",
  requestId: "x-delta-request-id",
  timeout: "x-delta-timeout",
  route: "x-delta-route",
  app: "x-delta-app",
  replayed: "x-delta-replayed",
  stale: "x-delta-stale",
  caller: "x-delta-caller",
  secret: "x-delta-forward-secret",
  direct: "x-delta-direct",
} as const;

/** The safe methods: reads, never calls (docs/protocol.md §2). */
export const READ_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PROPFIND", "REPORT", "SEARCH", "QUERY"]);

const REQUEST_ID = /^[A-Za-z0-9._~:-]{1,128}$/;

/** The state folder for this OS (docs/design.md §7): `DELTA_STATE_DIR` when set; macOS
 * `~/Library/Application Support/Delta`; elsewhere `$XDG_STATE_HOME/delta`
 * or `~/.local/state/delta`. */
export function defaultStateDir(): string {
  const d = process.env.DELTA_STATE_DIR;
  if (d) return d;
  let home = "";
  try {
    home = homedir();
  } catch {
    return "";
  }
  if (!home) return "";
  if (process.platform === "darwin") return join(home, "Library", "Application Support", "Delta");
  const x = process.env.XDG_STATE_HOME;
  return x ? join(x, "delta") : join(home, ".local", "state", "delta");
}

/** A request id: a random UUID (version 4). Mint it and keep it before a
 * call leaves, so that the app can find the call again after a crash. */
export function newRequestId(): string {
  return randomUUID();
}

/** Throws {@link BadInput} unless rid is 1–128 of `A-Z a-z 0-9 . _ ~ : -`,
 * not only dots (Delta's rule). */
export function checkRequestId(rid: string): void {
  if (!REQUEST_ID.test(rid) || /^\.+$/.test(rid)) {
    throw new BadInput(`request id ${JSON.stringify(rid)} is not 1-128 of A-Z a-z 0-9 . _ ~ : - (and not only dots); nothing was sent`);
  }
}

/** local.json: where the running Delta listens. */
export interface LocalFile {
  url: string;
  pid?: number;
}

/** Reads local.json; an error with code ENOENT when no Delta runs on the folder. */
export function readLocal(stateDir: string): LocalFile {
  const path = join(stateDir, LOCAL_JSON);
  const raw = readFileSync(path, "utf8");
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (e) {
    throw new Error(`${path} is not Delta's local.json (${(e as Error).message})`);
  }
  if (typeof v !== "object" || v === null || typeof (v as LocalFile).url !== "string" || !(v as LocalFile).url) {
    throw new Error(`${path} is not Delta's local.json (it names no url)`);
  }
  return v as LocalFile;
}

/** The local API's token (local-token, 0600). */
export function readToken(stateDir: string): string {
  return readFileSync(join(stateDir, TOKEN_FILE), "utf8").trim();
}

/** Whether a process with this id exists (signal 0); another user's counts as alive. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Whether local.json names a Delta that is no longer running (a crash or
 * SIGKILL left it); if so it is removed, unless a new Delta has written
 * another meanwhile. */
export function leftBehind(stateDir: string, lf: LocalFile): boolean {
  const pid = lf.pid ?? 0;
  if (!Number.isInteger(pid) || pid <= 0 || pidAlive(pid)) return false;
  try {
    if (readLocal(stateDir).pid === pid) unlinkSync(join(stateDir, LOCAL_JSON));
  } catch {
    // a file that cannot be removed is still not believed
  }
  return true;
}

/** The proof of holding token for nonce: hex(HMAC-SHA256(token,
 * "delta-local-proof/1" NUL nonce)), as Delta answers it. */
export function proof(token: string, nonce: string): string {
  return createHmac("sha256", token).update("delta-local-proof/1\0" + nonce).digest("hex");
}

/**
 * Has the listener on sock prove it holds this folder's token before
 * anything of the app's goes on the connection: it answers an HMAC of a
 * fresh nonce keyed by the token, so the token itself never leaves. Rejects
 * with {@link NotDelta} when it cannot. The socket is left paused, with
 * nothing of the proof's answer unread.
 */
export function prove(sock: Socket, addr: string, token: string, stateDir = "", timeoutMs = 5000): Promise<void> {
  const nonce = randomBytes(16).toString("hex");
  return new Promise<void>((resolve, reject) => {
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (err?: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.removeListener("data", onData);
      sock.removeListener("error", onError);
      sock.removeListener("close", onClose);
      sock.pause();
      if (err) reject(err);
      else resolve();
    };
    const notDelta = (why: string): void => finish(new NotDelta(addr, why, stateDir));
    const timer = setTimeout(() => notDelta(`it did not answer the proof within ${timeoutMs / 1000} s`), timeoutMs);
    const onError = (e: Error): void => notDelta(`it did not answer as Delta does: ${e.message}`);
    const onClose = (): void => notDelta("it closed the connection without answering the proof");
    const onData = (b: Buffer): void => {
      buf = Buffer.concat([buf, b]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) {
        if (buf.length > 16 << 10) notDelta("it did not answer as Delta does: a head over 16 KiB");
        return;
      }
      const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
      const m = /^HTTP\/1\.\d (\d{3})/.exec(lines[0] ?? "");
      if (!m) {
        notDelta(`it did not answer as Delta does: ${JSON.stringify((lines[0] ?? "").slice(0, 80))}`);
        return;
      }
      const status = Number(m[1]);
      const headers = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const i = line.indexOf(":");
        if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
      }
      const cl = headers.get("content-length") ?? "";
      const length = /^\d+$/.test(cl) ? Number(cl) : -1;
      if (length < 0 || length > 4096) {
        notDelta(`it answered the proof ${status} without a length Delta gives`);
        return;
      }
      const rest = buf.subarray(end + 4);
      if (rest.length < length) return; // more to come
      if (!headers.has(H.outcome)) {
        notDelta(`it answered ${status} without X-Delta-Outcome`);
        return;
      }
      if (rest.length > length) {
        notDelta("it sent more than the proof");
        return;
      }
      let got: unknown = undefined;
      if (status === 200) {
        try {
          got = (JSON.parse(rest.toString("utf8")) as { proof?: unknown }).proof;
        } catch {
          got = undefined;
        }
      }
      if (typeof got !== "string") {
        notDelta(`it answered the proof ${status}`);
        return;
      }
      const want = Buffer.from(proof(token, nonce));
      const have = Buffer.from(got);
      if (have.length !== want.length || !timingSafeEqual(have, want)) {
        notDelta("it does not hold this folder's token (another folder's Delta, or another program)");
        return;
      }
      finish();
    };
    sock.on("data", onData);
    sock.on("error", onError);
    sock.on("close", onClose);
    sock.write(`GET ${PROOF_PATH}?nonce=${nonce} HTTP/1.1\r\nHost: ${addr}\r\n\r\n`);
  });
}

/** Delta's JSON on an answer it makes itself. */
export interface ErrorBody {
  error: string;
  detail: string;
  requestId: string;
  peer: string;
  road: string;
  sent?: boolean;
  carriedOut?: boolean;
}

/** Parses Delta's error JSON; fields absent or of another type are left empty. */
export function parseErrorBody(body: Buffer | string): ErrorBody {
  const out: ErrorBody = { error: "", detail: "", requestId: "", peer: "", road: "" };
  let v: unknown;
  try {
    v = JSON.parse(body.toString());
  } catch {
    return out;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return out;
  const o = v as Record<string, unknown>;
  const str = (k: string): string => (typeof o[k] === "string" ? (o[k] as string) : "");
  out.error = str("error");
  out.detail = str("detail");
  out.requestId = str("request_id");
  out.peer = str("peer");
  out.road = str("road");
  if (typeof o.sent === "boolean") out.sent = o.sent;
  if (typeof o.carried_out === "boolean") out.carriedOut = o.carried_out;
  return out;
}

/** A header's one value ("" when absent). */
export function header(h: IncomingHttpHeaders, name: string): string {
  const v = h[name.toLowerCase()];
  return Array.isArray(v) ? (v[0] ?? "") : (v ?? "");
}

/** The outcome an error answer of Delta's stands for (its `X-Delta-Outcome`
 * is neither `answered` nor `stale`): the typed error, with Delta's fields.
 * A body that is not Delta's JSON still gets its type from the outcome. */
export function errorFor(status: number, reason: string, headers: IncomingHttpHeaders, body: Buffer, requestId = ""): DeltaError {
  const outcome = header(headers, H.outcome);
  const eb = parseErrorBody(body);
  const detail = eb.detail || `Delta answered ${status} ${reason} (${outcome})`.replace(" )", ")");
  const rid = eb.requestId || header(headers, H.requestId) || requestId;
  if (outcome === "outcome_unknown") return new OutcomeUnknown(detail, rid, eb.peer);
  if (outcome === "conflict") return new Conflict(detail, rid);
  if (outcome === "bad_request") return new BadInput(detail, status, rid, eb.sent === false);
  const nothingSent = eb.sent === false;
  const notCarriedOut = eb.carriedOut === false || nothingSent;
  const f = { outcome, status, requestId: rid, peer: eb.peer, road: eb.road || header(headers, H.route), nothingSent, notCarriedOut };
  if (nothingSent) return new NothingSent(detail, f);
  if (notCarriedOut) return new NotCarriedOut(detail, f);
  return new Unavailable(detail, f);
}

/** An owner app's answer as a journal keeps it (a call's record). */
export interface StoredAnswer {
  status: number;
  /** As an {@link Answer}'s: lower-case names, as node:http gives them. */
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body was too big to keep. */
  omitted: boolean;
  /** The body as UTF-8, as fetch's Response.text(). */
  text(): Promise<string>;
  /** The body parsed as JSON, as fetch's Response.json(). */
  json(): Promise<unknown>;
}

/** text() and json() over a body held whole, as fetch's Response has them. */
export function bodyMethods(body: Buffer): { text(): Promise<string>; json(): Promise<unknown> } {
  return {
    text: async () => body.toString("utf8"),
    json: async () => JSON.parse(body.toString("utf8")) as unknown,
  };
}

/** A JSON header map (name: [values]) as node:http's IncomingHttpHeaders:
 * lower-case names, repeated values joined with ", " (set-cookie kept as a
 * list). */
export function incomingHeaders(h: Record<string, unknown>): IncomingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) {
    const vs = (Array.isArray(v) ? v : [v]).map(String);
    const name = k.toLowerCase();
    const prev = out[name];
    if (name === "set-cookie") out[name] = [...(Array.isArray(prev) ? prev : []), ...vs];
    else out[name] = [...(prev === undefined ? [] : [prev as string]), ...vs].join(", ");
  }
  return out as IncomingHttpHeaders;
}

/** A call's state in the journal. */
export type CallState = "sending" | "answered" | "unavailable" | "unknown" | "carried_out" | "not_carried_out" | "needs_person";

/** A call's states by name (the same words in every kit:
 * kit/contract/operations.json). */
export const State = {
  Sending: "sending",
  Answered: "answered",
  Unavailable: "unavailable",
  Unknown: "unknown",
  CarriedOut: "carried_out",
  NotCarriedOut: "not_carried_out",
  NeedsPerson: "needs_person",
} as const satisfies Record<string, CallState>;

/**
 * A call as this computer's journal has it (GET /v1/calls/{id}). `raw`
 * holds the whole JSON, for fields this class does not name.
 */
export class CallRecord {
  requestId = "";
  peer = "";
  app = "";
  state: CallState | string = "";
  method = "";
  path = "";
  callerApp = "";
  outcome = "";
  detail = "";
  ownerState = "";
  asks = 0;
  dismissed = false;
  digest = "";
  settledBy = "";
  settleNote = "";
  createdAt = "";
  updatedAt = "";
  attempts: Record<string, unknown>[] = [];
  history: Record<string, unknown>[] = [];
  answer?: StoredAnswer;
  raw: Record<string, unknown> = {};

  /** A record from Delta's JSON. */
  static fromJSON(v: Record<string, unknown>): CallRecord {
    const r = new CallRecord();
    r.raw = v;
    const s = (k: string): string => (typeof v[k] === "string" ? (v[k] as string) : "");
    r.requestId = s("request_id");
    r.peer = s("peer");
    r.app = s("app");
    r.state = s("state");
    r.method = s("method");
    r.path = s("path");
    r.callerApp = s("caller_app");
    r.outcome = s("outcome");
    r.detail = s("detail");
    r.ownerState = s("owner_state");
    r.asks = typeof v.asks === "number" ? v.asks : 0;
    r.dismissed = v.dismissed === true;
    r.digest = s("digest");
    r.settledBy = s("settled_by");
    r.settleNote = s("settle_note");
    r.createdAt = s("created_at");
    r.updatedAt = s("updated_at");
    r.attempts = Array.isArray(v.attempts) ? (v.attempts as Record<string, unknown>[]) : [];
    r.history = Array.isArray(v.history) ? (v.history as Record<string, unknown>[]) : [];
    const a = v.answer as Record<string, unknown> | undefined;
    if (a && typeof a === "object") {
      const body = Buffer.from(typeof a.body_base64 === "string" ? a.body_base64 : "", "base64");
      r.answer = {
        status: typeof a.status === "number" ? a.status : 0,
        headers: incomingHeaders((a.headers as Record<string, unknown>) ?? {}),
        body,
        omitted: a.body_omitted === true,
        ...bodyMethods(body),
      };
    }
    return r;
  }

  /** Known for good: answered, unavailable, carried_out or not_carried_out
   * (needs_person is not: a person must check). */
  get settled(): boolean {
    return ["answered", "unavailable", "carried_out", "not_carried_out"].includes(this.state);
  }

  /** Still to come: sending, or unknown while Delta asks the owner. */
  get waiting(): boolean {
    return this.state === "sending" || this.state === "unknown";
  }
}
