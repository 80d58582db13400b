/**
 * The client of this computer's Delta: reads, calls sent at most once,
 * the calls journal, apps and forwards.
 *
 * @module
 */

import { Agent, request, type ClientRequest, type ClientRequestArgs, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { connect, type Socket } from "node:net";
import { basename } from "node:path";
import type { Duplex, Readable } from "node:stream";

import { readDirect } from "./direct.js";
import { APIError, BadInput, Cut, DeltaDown, DeltaError, NotDelta, OutcomeUnknown, Unavailable } from "./errors.js";
import * as wire from "./wire.js";
import { CallRecord } from "./wire.js";

/** Reports a body's progress: bytes so far, and the whole (-1 if unknown). */
export type Progress = (done: number, total: number) => void;

/** A call's body: bytes, a string (UTF-8), or a stream of bytes of any size
 * (a Node Readable or any async iterable), never held whole. */
export type Body = string | Uint8Array | Readable | AsyncIterable<Uint8Array> | Iterable<Uint8Array> | null | undefined;

/** What may go with a read. */
export interface ReadOptions {
  /** Ask for a road: "thunderbolt", "lan" or "tailnet" (`X-Delta-Route`). */
  route?: string;
  /** How long the owner app may take to begin its answer, milliseconds,
   * as every time in this kit (`X-Delta-Timeout`, at most 600 000). Unset:
   * the owner app's own timeout, else Delta's 30 s. It never bounds the
   * body once it has begun. */
  timeoutMs?: number;
  headers?: Record<string, string>;
  progress?: Progress;
}

/** What may go with a call. */
export interface CallOptions extends ReadOptions {
  /** The call's id; mint it with {@link newRequestId} and keep it before
   * calling when the app must find the call again after a crash. */
  requestId?: string;
  /** A stream body's length, when known (sent with Content-Length; else chunked). */
  size?: number;
}

/**
 * The owner app's own answer, whatever its status. `road` is the road it
 * came over; `requestId` the call's id; `replayed`: the call had been made
 * before under this id and this is the answer recorded then (nothing was
 * sent again); `direct`: this computer's Delta was down and the kit read
 * the peer directly; `stale`: the peer could not be reached and this is a
 * cached answer (`staleReason` why, `age` how old in seconds).
 */
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  road: string;
  requestId: string;
  replayed: boolean;
  direct: boolean;
  stale: boolean;
  staleReason: string;
  age: number;
  /** The body as UTF-8, as fetch's Response.text(). */
  text(): Promise<string>;
  /** The body parsed as JSON, as fetch's Response.json(). */
  json(): Promise<unknown>;
}

/** The options each operation takes, by name: an option not named here is
 * refused with a TypeError (a misspelt one would otherwise be ignored in
 * plain JavaScript). The contract test holds them to
 * kit/contract/operations.json. */
export const OPTIONS = {
  Client: ["stateDir", "app", "now"],
  get: ["route", "timeoutMs", "headers", "progress"],
  stream: ["route", "timeoutMs", "headers", "progress"],
  call: ["route", "timeoutMs", "headers", "progress", "requestId", "size"],
  waitSettled: ["timeoutMs"],
  forward: ["listen", "token"],
} as const;

/** checkOptions throws a TypeError naming each option op does not take. */
function checkOptions(op: keyof typeof OPTIONS, opts: object): void {
  const known: readonly string[] = OPTIONS[op];
  for (const k of Object.keys(opts)) {
    if (known.includes(k)) continue;
    const near = known.find((n) => n.toLowerCase().startsWith(k.toLowerCase()) || k.toLowerCase().startsWith(n.toLowerCase()));
    const hint = !near ? ` (it takes ${known.join(", ")})` :
      ` (did you mean ${JSON.stringify(near)}?${near.endsWith("Ms") ? " times are in milliseconds" : ""})`;
    throw new TypeError(`${op}: unknown option ${JSON.stringify(k)}${hint}; nothing was sent`);
  }
}

const CHUNK = 256 << 10;

/**
 * An owner app's answer whose body streams: iterate it (`for await`), or
 * take it whole with {@link Response.bytes}, {@link Response.text} or
 * {@link Response.json}; {@link Response.close} one not read to its end. A
 * body that breaks off before its end throws {@link Cut}, never a clean
 * end: an answer that ends cleanly is whole.
 */
export class Response implements AsyncIterable<Buffer> {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly road: string;
  readonly requestId: string;
  readonly replayed: boolean;
  readonly direct: boolean;
  readonly stale: boolean;
  readonly staleReason: string;
  readonly age: number;
  /** The body's length, -1 when not announced. */
  readonly total: number;
  readonly #res: IncomingMessage;
  readonly #progress?: Progress;
  #n = 0;
  #used = false;

  /** @internal */
  constructor(res: IncomingMessage, opts: { requestId?: string; direct?: boolean; road?: string; progress?: Progress } = {}) {
    const h = res.headers;
    this.#res = res;
    this.#progress = opts.progress;
    this.status = res.statusCode ?? 0;
    this.headers = h;
    this.road = opts.road || wire.header(h, wire.H.route);
    this.requestId = wire.header(h, wire.H.requestId) || opts.requestId || "";
    this.replayed = wire.header(h, wire.H.replayed) === "true";
    this.direct = opts.direct === true || wire.header(h, wire.H.direct) === "true";
    this.stale = wire.header(h, wire.H.outcome) === "stale";
    this.staleReason = this.stale ? wire.header(h, wire.H.stale) : "";
    const age = wire.header(h, "age");
    this.age = this.stale && /^\d+$/.test(age) ? Number(age) : 0;
    const cl = wire.header(h, "content-length");
    this.total = /^\d+$/.test(cl) && res.statusCode !== 204 && res.statusCode !== 304 ? Number(cl) : -1;
  }

  /** The body's pieces as they come; throws {@link Cut} if it breaks off. */
  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    if (this.#used) throw new Error("the answer's body was read already");
    this.#used = true;
    const res = this.#res;
    try {
      for await (const b of res) {
        const buf = b as Buffer;
        this.#n += buf.length;
        this.#progress?.(this.#n, this.total);
        yield buf;
      }
    } catch (e) {
      res.destroy();
      throw new Cut(this.#n, this.total, (e as Error).message || String(e));
    }
    if (!res.complete || (this.total >= 0 && this.#n < this.total)) {
      res.destroy();
      throw new Cut(this.#n, this.total, "the connection closed before the answer's end");
    }
    this.#progress?.(this.#n, this.total);
  }

  /** The whole body. */
  async bytes(): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const b of this) parts.push(b);
    return Buffer.concat(parts);
  }

  /** The whole body as UTF-8. */
  async text(): Promise<string> {
    return (await this.bytes()).toString("utf8");
  }

  /** The whole body as JSON. */
  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  /** The answer's fields with body. */
  answer(body: Buffer): Answer {
    return {
      status: this.status, headers: this.headers, body, road: this.road, requestId: this.requestId, replayed: this.replayed,
      direct: this.direct, stale: this.stale, staleReason: this.staleReason, age: this.age, ...wire.bodyMethods(body),
    };
  }

  /** Closes the answer; one not read to its end closes its connection. */
  close(): void {
    if (!this.#res.complete) this.#res.destroy();
  }
}

/**
 * A local API answer as a {@link Response} whose body streams, or the typed
 * outcome (reading, and closing, Delta's own JSON). Exported for the kits'
 * contract test.
 *
 * @internal
 */
export async function answerOf(res: IncomingMessage, requestId: string, opts: { direct?: boolean; road?: string; progress?: Progress } = {}): Promise<Response> {
  const outcome = wire.header(res.headers, wire.H.outcome);
  if (outcome === "answered" || outcome === "stale") return new Response(res, { ...opts, requestId });
  const parts: Buffer[] = [];
  let n = 0;
  try {
    for await (const b of res) {
      parts.push(b as Buffer);
      n += (b as Buffer).length;
      if (n > 1 << 20) break;
    }
  } catch {
    // what came is enough to name the outcome: the status and the header say it
  }
  res.destroy();
  if (!outcome) {
    throw new DeltaError(`the answer (${res.statusCode} ${res.statusMessage}) has no X-Delta-Outcome: it is not Delta's`);
  }
  throw wire.errorFor(res.statusCode ?? 0, res.statusMessage ?? "", res.headers, Buffer.concat(parts), requestId);
}

/** The program's name, as the calling app is named to the owner by default. */
export function programName(): string {
  const main = process.argv[1];
  return main ? basename(main).replace(/\.(m?js|cjs|ts)$/, "") : "node";
}

/** The connection failed after it was made: a call may have been handed over. */
class HandedOver extends Error {}

/** Options of a {@link Client}. */
export interface ClientOptions {
  /** The state folder; by default `DELTA_STATE_DIR`, else the OS's. */
  stateDir?: string;
  /** The calling app's name, as the owner, the menu and `delta calls` see it
   * (`X-Delta-App`); by default the program's name. */
  app?: string;
  /** The clock, in milliseconds since the epoch (tests). */
  now?: () => number;
}

/**
 * A client of this computer's Delta, found through the state folder's
 * local.json and local-token (docs/design.md §7).
 *
 * `new Client()` names the default state folder and, as `fetch` and
 * `new Agent()` do, never throws: each request finds Delta through the
 * folder when it is made. When Delta is not running, a request rejects
 * with {@link DeltaDown} naming the folder, unless Delta left what reads
 * need to go on without it (direct.json): then reads go directly to the
 * peer and everything else rejects with {@link DeltaDown}.
 *
 * Every connection to Delta is proven before anything of the app's goes on
 * it: the listener must answer an HMAC of a fresh nonce keyed by the token,
 * so a program squatting on a dead Delta's port gets neither the token nor
 * a request ({@link NotDelta}). Reads share a pool of proven connections;
 * each call has a connection of its own and is never sent twice.
 */
export class Client {
  readonly stateDir: string;
  readonly app: string;
  readonly now: () => number;
  #url = "";
  #token = "";
  readonly #agent: Agent;

  constructor(opts: ClientOptions = {}) {
    checkOptions("Client", opts);
    this.stateDir = opts.stateDir || wire.defaultStateDir();
    this.app = opts.app || programName();
    this.now = opts.now ?? Date.now;
    const self = this;
    class ProvenAgent extends Agent {
      override createConnection(_o: ClientRequestArgs, cb?: (err: Error | null, stream: Duplex) => void): undefined {
        self.dial().then((s) => { s.resume(); cb?.(null, s); }, (e: Error) => cb?.(e, undefined as unknown as Duplex));
        return undefined;
      }
    }
    this.#agent = new ProvenAgent({ keepAlive: true, maxSockets: 16, maxFreeSockets: 16 });
  }

  /** Closes the pooled connections. */
  close(): void {
    this.#agent.destroy();
  }

  /** The running Delta's local API, as local.json says ("" if down). */
  get url(): string {
    try {
      return this.endpoint(false)[0];
    } catch {
      return "";
    }
  }

  // -- finding and proving Delta -----------------------------------------

  private endpoint(reload: boolean): [string, string] {
    if (this.#url && !reload) return [this.#url, this.#token];
    if (!this.stateDir) throw new DeltaDown("no state folder: set DELTA_STATE_DIR (HOME is not set either)");
    let lf: wire.LocalFile;
    try {
      lf = wire.readLocal(this.stateDir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") {
        throw new DeltaDown("it has no local.json, which a running Delta writes there", { stateDir: this.stateDir });
      }
      throw new DeltaDown((e as Error).message, { stateDir: this.stateDir });
    }
    if (wire.leftBehind(this.stateDir, lf)) {
      throw new DeltaDown("its local.json was left by a Delta that is no longer running (a crash or a SIGKILL); it was removed",
        { stateDir: this.stateDir, url: lf.url });
    }
    let tok: string;
    try {
      tok = wire.readToken(this.stateDir);
    } catch (e) {
      throw new DeltaDown(`read the local token: ${(e as Error).message}`, { stateDir: this.stateDir, url: lf.url });
    }
    this.#url = lf.url;
    this.#token = tok;
    return [lf.url, tok];
  }

  /** A new connection to the local API, proven before anything of the app's
   * is sent. After a failed connect, local.json is read once more (Delta may
   * have restarted elsewhere: nothing was sent, so a second connect is safe). */
  private async dial(): Promise<Socket> {
    let last: Error = new Error("no attempt");
    let url = "";
    for (const reload of [false, true]) {
      const [u, tok] = this.endpoint(reload);
      url = u;
      const p = new URL(u);
      const host = p.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1";
      const port = Number(p.port || 80);
      let sock: Socket;
      try {
        sock = await new Promise<Socket>((resolve, reject) => {
          const s = connect({ host, port, noDelay: true });
          const t = setTimeout(() => { s.destroy(); reject(new Error("connect timed out after 5 s")); }, 5000);
          s.once("connect", () => { clearTimeout(t); s.removeListener("error", reject); resolve(s); });
          s.once("error", (e) => { clearTimeout(t); reject(e); });
        });
      } catch (e) {
        last = e as Error;
        continue;
      }
      try {
        await wire.prove(sock, `${host}:${port}`, tok, this.stateDir);
      } catch (e) {
        sock.destroy();
        last = e as Error;
        continue;
      }
      return sock;
    }
    if (last instanceof NotDelta) throw last;
    throw new DeltaDown(`${url} did not take the connection: ${last.message}`, { stateDir: this.stateDir, url });
  }

  /** One request to the local API on a proven connection: the pool's
   * (reads, Delta's API) or one of its own (calls). DeltaDown when no
   * connection was made (nothing was sent); HandedOver when one was and the
   * exchange failed. */
  private async send(method: string, path: string, headers: OutgoingHttpHeaders, body: Body, pooled: boolean,
    progress?: Progress, size = -1): Promise<IncomingMessage> {
    for (let attempt = 1; ; attempt++) {
      const own = pooled ? undefined : await this.dial();
      const [url, tok] = this.endpoint(false);
      const u = new URL(url);
      const h: OutgoingHttpHeaders = { ...headers, Authorization: "Bearer " + tok };
      let req: ClientRequest | undefined;
      try {
        return await new Promise<IncomingMessage>((resolve, reject) => {
          let connected = own !== undefined;
          req = request({
            method, path, headers: h, host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || 80),
            ...(own ? { createConnection: () => own } : { agent: this.#agent }),
          });
          req.once("socket", () => { connected = true; });
          req.once("response", resolve);
          req.once("error", (e) => {
            if (e instanceof DeltaDown) reject(e);
            else if (!connected) reject(e);
            else reject(Object.assign(new HandedOver(e.message), { reused: req?.reusedSocket === true }));
          });
          own?.resume();
          writeBody(req, body, size, progress).catch((e: Error) => {
            req?.destroy(new Error(`the call's body failed while it was being sent: ${e.message}`));
          });
        });
      } catch (e) {
        const reused = (e as { reused?: boolean }).reused === true;
        if (e instanceof HandedOver && attempt === 1 && reused && pooled && (body === undefined || body === null) && wire.READ_METHODS.has(method)) {
          continue; // a pooled connection Delta had closed: a read is safe on a fresh one
        }
        throw e;
      }
    }
  }

  // -- reads ---------------------------------------------------------------

  /**
   * Reads path from app on peer (GET) and holds the whole answer; for
   * answers of any size, {@link Client.stream}. A read is safe: Delta may
   * retry it on a fresh road, resume it, or serve a cached answer marked
   * `stale`. Throws {@link Unavailable} (or a kind of it), {@link Cut},
   * {@link BadInput}, {@link DeltaDown}.
   */
  async get(peer: string, app: string, path: string, opts: ReadOptions = {}): Promise<Answer> {
    checkOptions("get", opts);
    const r = await this.stream(peer, app, path, opts);
    return r.answer(await r.bytes());
  }

  /**
   * Reads path from app on peer as {@link Client.get} does, and returns the
   * answer with its body still to read: nothing is held whole. While this
   * computer's Delta is down, the read goes directly to the peer with the
   * read ticket Delta left (direct.json); a call never does.
   */
  async stream(peer: string, app: string, path: string, opts: ReadOptions = {}): Promise<Response> {
    checkOptions("stream", opts);
    const h = this.headers(opts);
    if (!path.startsWith("/")) path = "/" + path;
    let res: IncomingMessage;
    try {
      res = await this.send("GET", peerPath(peer, app, path), h, null, true);
    } catch (e) {
      if (e instanceof DeltaDown) {
        const d = await readDirect(this, e, peer, app, path, h);
        return answerOf(d.res, "", { direct: true, road: d.road, progress: opts.progress });
      }
      if (e instanceof HandedOver) {
        throw new Unavailable(`the read was handed to this computer's Delta and no answer came back (${e.message}); a read is safe to make again`,
          { outcome: "unavailable", status: 0, peer });
      }
      throw e;
    }
    return answerOf(res, "", { progress: opts.progress });
  }

  // -- calls ---------------------------------------------------------------

  /**
   * Sends method to path of app on peer, at most once, on a connection of
   * its own. A body of any size is never held whole (a stream is sent as it
   * is read: with Content-Length when `size` is given, else chunked).
   *
   * Resolves to the owner app's {@link Answer} (any status), or rejects
   * with: {@link NothingSent} / {@link NotCarriedOut} (safe to make again),
   * {@link OutcomeUnknown} (Delta reconciles it: {@link Client.waitSettled}),
   * {@link Conflict}, {@link BadInput}, {@link DeltaDown}.
   */
  async call(peer: string, app: string, method: string, path: string, body?: Body, opts: CallOptions = {}): Promise<Answer> {
    checkOptions("call", opts);
    method = method.toUpperCase();
    if (wire.READ_METHODS.has(method) || method === "" || method === "CONNECT" || method === "TRACE") {
      throw new BadInput(`${JSON.stringify(method)} is not a call's method; reads (safe methods) go through get or stream; nothing was sent`);
    }
    const rid = opts.requestId || wire.newRequestId();
    wire.checkRequestId(rid);
    const h = this.headers(opts);
    h["X-Delta-Request-Id"] = rid;
    let size = opts.size ?? -1;
    if (typeof body === "string") body = Buffer.from(body, "utf8");
    if (body === null || body === undefined) size = 0;
    else if (body instanceof Uint8Array) size = body.length;
    if (size >= 0) h["Content-Length"] = String(size);
    else h["Transfer-Encoding"] = "chunked"; // said outright: node:http frames no body by itself for DELETE and the like
    let res: IncomingMessage;
    try {
      res = await this.send(method, peerPath(peer, app, path), h, body, false, opts.progress, size);
    } catch (e) {
      if (e instanceof DeltaDown) {
        e.requestId = rid;
        throw e;
      }
      if (e instanceof HandedOver) {
        throw new OutcomeUnknown(`the call was handed to this computer's Delta and no answer came back from it (${e.message}); ` +
          `Delta may have sent it, and its record under request id ${rid} will say what happened (Delta, once running, never sends it again and asks the owner)`, rid, peer);
      }
      throw e;
    }
    const r = await answerOf(res, rid);
    try {
      return r.answer(await r.bytes());
    } catch (e) {
      if (e instanceof Cut) {
        throw new OutcomeUnknown(`the owner's answer was recorded, but reading it from the local Delta failed (${e.message}): ` +
          `its record under request id ${r.requestId} has it`, r.requestId, peer);
      }
      throw e;
    }
  }

  /**
   * Waits until call requestId's outcome is known for good or needs a
   * person, and resolves to its record: carried_out (with the owner's
   * answer), not_carried_out, needs_person, or, for a call that was not
   * unknown, answered or unavailable. Rejects with a timeout error
   * (`code` "ETIMEDOUT") when timeoutMs passes first.
   */
  async waitSettled(requestId: string, opts: { timeoutMs?: number } = {}): Promise<CallRecord> {
    checkOptions("waitSettled", opts);
    const deadline = opts.timeoutMs === undefined ? undefined : Date.now() + opts.timeoutMs;
    for (;;) {
      let wait = 600;
      if (deadline !== undefined) wait = Math.min(wait, Math.max(Math.ceil((deadline - Date.now()) / 1000), 1));
      const rec = await this.record("GET", wire.path("call", { id: requestId }) + `?wait=${wait}`);
      if (!rec.waiting) return rec;
      if (deadline !== undefined && Date.now() >= deadline) {
        throw Object.assign(new Error(`call ${requestId} is still ${rec.state} after ${opts.timeoutMs} ms: ${rec.detail}`), { code: "ETIMEDOUT" });
      }
    }
  }

  // -- the calls journal and Delta's own API -------------------------------

  /** Call requestId's record, with its attempts and history. */
  callRecord(requestId: string): Promise<CallRecord> {
    return this.record("GET", wire.path("call", { id: requestId }));
  }

  /** The calls this computer made, newest first: state "" for all,
   * "unsettled", "dismissed", or a call state. */
  async calls(state = ""): Promise<CallRecord[]> {
    const v = await this.api("GET", wire.path("calls") + (state ? "?state=" + q(state) : ""));
    return ((v.calls as Record<string, unknown>[] | undefined) ?? []).map((c) => CallRecord.fromJSON(c));
  }

  /** Makes Delta ask the owner about an unsettled call now. */
  ask(requestId: string): Promise<CallRecord> {
    return this.record("POST", wire.path("call_action", { id: requestId, action: "ask" }));
  }

  /** Sets an unsettled call aside: hidden from the menu, still asked about. */
  dismiss(requestId: string): Promise<CallRecord> {
    return this.record("POST", wire.path("call_action", { id: requestId, action: "dismiss" }));
  }

  /** Drops what a call sent (its kept headers and body); its record stays. */
  forget(requestId: string): Promise<CallRecord> {
    return this.record("POST", wire.path("call_action", { id: requestId, action: "forget" }));
  }

  /** Records a person's settlement of an unknown or needs_person call, with
   * what they saw. Delta then stops asking the owner. */
  async settle(requestId: string, state: "carried_out" | "not_carried_out", note = ""): Promise<CallRecord> {
    if (state !== "carried_out" && state !== "not_carried_out") {
      throw new BadInput(`state ${JSON.stringify(state)} is not carried_out or not_carried_out; nothing was sent`);
    }
    return this.record("POST", wire.path("call_action", { id: requestId, action: "settle" }), { state, note });
  }

  /** What this computer's apps received in the last 7 days. */
  async receipts(state = ""): Promise<Record<string, unknown>[]> {
    const v = await this.api("GET", wire.path("receipts") + (state ? "?state=" + q(state) : ""));
    return (v.receipts as Record<string, unknown>[] | undefined) ?? [];
  }

  /** This computer's Delta's status (GET /v1/status). */
  status(): Promise<Record<string, unknown>> {
    return this.api("GET", wire.path("status"));
  }

  /** Registers (or re-points) the owner app name at url
   * ("http://127.0.0.1:PORT"); the answer's `secret` is the forward secret
   * the app checks ({@link ownerHandler}). */
  registerApp(name: string, url: string): Promise<Record<string, unknown> & { secret: string }> {
    return this.api("PUT", wire.path("app", { name }), { url }) as Promise<Record<string, unknown> & { secret: string }>;
  }

  /** The registered owner apps. */
  async apps(): Promise<Record<string, unknown>[]> {
    return ((await this.api("GET", wire.path("apps"))).apps as Record<string, unknown>[] | undefined) ?? [];
  }

  /** The ports programs on this computer listen on that an app could be
   * shared at, each with its program where the OS tells and the app already
   * shared at it (GET /v1/listening; Linux and macOS). */
  async listening(): Promise<Record<string, unknown>[]> {
    return ((await this.api("GET", wire.path("listening"))).ports as Record<string, unknown>[] | undefined) ?? [];
  }

  /** The apps peer shares with this computer, as it says now over the
   * pinned road (a Delta tells its paired peers, and no one else), each with
   * this computer's forward to it (`forward`) when there is one. */
  async peerApps(peer: string): Promise<Record<string, unknown>[]> {
    return ((await this.api("GET", wire.path("peer_apps", { peer }))).apps as Record<string, unknown>[] | undefined) ?? [];
  }

  /** Static mode's pairing (GET /v1/pairing): this computer (`self`, its
   * `id`), the computers asking to pair with it (`requests`) and the peers it
   * paired (`peers`), each with its `state`: "paired" once the peer has
   * paired this computer too. */
  pairing(): Promise<Record<string, unknown>> {
    return this.api("GET", wire.path("pairing"));
  }

  /** A person's yes here to the computer id at address (its peer API,
   * HOST:PORT), known here as name. It is asked at once, and paired when a
   * person there says yes too (the answer's `state`). */
  pair(name: string, id: string, address: string, road = ""): Promise<Record<string, unknown>> {
    return this.api("PUT", wire.path("pair", { name }), road ? { id, address, road } : { id, address });
  }

  /** Forgets peer name: its door admits it no more. */
  async unpair(name: string): Promise<void> {
    await this.api("DELETE", wire.path("pair", { name }));
  }

  /** Accepts the request to pair of the computer id, known here as name (if
   * empty, the name it gave). */
  acceptPair(id: string, name = ""): Promise<Record<string, unknown>> {
    return this.api("POST", wire.path("pair_request", { id, action: "accept" }), name ? { name } : {});
  }

  /** Ignores the request to pair of the computer id: it is not shown again
   * until Delta restarts. */
  async ignorePair(id: string): Promise<void> {
    await this.api("POST", wire.path("pair_request", { id, action: "ignore" }));
  }

  /** Gives this computer a new name (PUT /v1/name; static mode): its peers
   * know it by the names they chose, which do not change. */
  rename(name: string): Promise<Record<string, unknown>> {
    return this.api("PUT", wire.path("name"), { name });
  }

  /** Unregisters an owner app. */
  async removeApp(name: string): Promise<void> {
    await this.api("DELETE", wire.path("app", { name }));
  }

  /** Opens (or changes) this computer's forward to app on peer: a loopback
   * URL (`url`) that carries every request to that app, with no prefix and
   * no token. `listen` is a loopback address (by default the forward's, or a
   * free port); `token` asks for the local token. */
  async forward(peer: string, app: string, opts: { listen?: string; token?: boolean } = {}): Promise<Record<string, unknown>> {
    checkOptions("forward", opts);
    const body: Record<string, unknown> = {};
    if (opts.listen) body.listen = opts.listen;
    if (opts.token) body.token = true;
    return this.api("PUT", wire.path("forward", { peer, app }), body);
  }

  /** This computer's forwards. */
  async forwards(): Promise<Record<string, unknown>[]> {
    return ((await this.api("GET", wire.path("forwards"))).forwards as Record<string, unknown>[] | undefined) ?? [];
  }

  /** Closes and forgets the forward to app on peer. */
  async removeForward(peer: string, app: string): Promise<void> {
    await this.api("DELETE", wire.path("forward", { peer, app }));
  }

  private async record(method: string, path: string, body?: unknown): Promise<CallRecord> {
    return CallRecord.fromJSON(await this.api(method, path, body));
  }

  private async api(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const data = body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body));
    const h = { "Content-Type": "application/json", "Content-Length": String(data.length) };
    let res: IncomingMessage;
    try {
      res = await this.send(method, path, h, data.length ? data : null, true);
    } catch (e) {
      if (e instanceof HandedOver) throw new DeltaError(`Delta took ${method} ${path} and no answer came back (${e.message})`);
      throw e;
    }
    let raw: Buffer;
    try {
      raw = await new Response(res).bytes();
    } catch (e) {
      throw new DeltaError(`Delta's answer to ${method} ${path} broke off: ${(e as Error).message}`);
    }
    const outcome = wire.header(res.headers, wire.H.outcome);
    if (!outcome) {
      throw new DeltaError(`${this.url} answered ${method} ${path} with ${res.statusCode} and no X-Delta-Outcome: it is not Delta's local API`);
    }
    if (Math.floor((res.statusCode ?? 0) / 100) !== 2) {
      const eb = wire.parseErrorBody(raw);
      throw new APIError(eb.detail || `Delta answered ${method} ${path} with ${res.statusCode}`, res.statusCode ?? 0, outcome);
    }
    if (!raw.toString().trim()) return {};
    let v: unknown;
    try {
      v = JSON.parse(raw.toString("utf8"));
    } catch (e) {
      throw new DeltaError(`Delta's answer to ${method} ${path} is not the JSON expected: ${(e as Error).message}`);
    }
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  }

  private headers(opts: ReadOptions): Record<string, string> {
    const h: Record<string, string> = { ...(opts.headers ?? {}) };
    const low = new Set(Object.keys(h).map((k) => k.toLowerCase()));
    if (!low.has(wire.H.app) && this.app) h["X-Delta-App"] = this.app;
    if (opts.route) h["X-Delta-Route"] = opts.route;
    if (opts.timeoutMs && opts.timeoutMs > 0) h["X-Delta-Timeout"] = (Math.min(opts.timeoutMs, 600_000) / 1000).toFixed(3);
    return h;
  }
}

function q(s: string): string {
  return encodeURIComponent(s);
}

function peerPath(peer: string, app: string, path: string): string {
  if (!path.startsWith("/")) path = "/" + path;
  return wire.path("peer", { peer, app }) + path;
}

function isAsyncIterable(v: unknown): v is AsyncIterable<Uint8Array> {
  return typeof v === "object" && v !== null && Symbol.asyncIterator in v;
}

/** Writes a request's body as it is read, waiting for the connection to
 * drain: nothing is held whole. */
async function writeBody(req: ClientRequest, body: Body, size: number, progress?: Progress): Promise<void> {
  if (body === null || body === undefined) {
    req.end();
    return;
  }
  let n = 0;
  const put = async (b: Uint8Array): Promise<void> => {
    if (!b.length) return;
    n += b.length;
    if (!req.write(b)) {
      await new Promise<void>((resolve, reject) => {
        const onDrain = (): void => { req.removeListener("close", onClose); resolve(); };
        const onClose = (): void => { req.removeListener("drain", onDrain); reject(new Error("the connection closed")); };
        req.once("drain", onDrain);
        req.once("close", onClose);
      });
    }
    progress?.(n, size);
  };
  if (body instanceof Uint8Array) {
    for (let i = 0; i < body.length; i += CHUNK) await put(body.subarray(i, i + CHUNK));
  } else if (isAsyncIterable(body)) {
    for await (const b of body) await put(typeof b === "string" ? Buffer.from(b) : b);
  } else {
    for (const b of body as Iterable<Uint8Array>) await put(b);
  }
  req.end();
}
