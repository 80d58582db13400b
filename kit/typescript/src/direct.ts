/**
 * Reads around a down Delta (docs/protocol.md, "Reads while this
 * computer's Delta is down"): directly to the peer's own Delta over its
 * thunderbolt road, then its lan road, with the read ticket and the pinned
 * TLS that Delta keeps in <state>/direct.json. A read only: a call never
 * goes around Delta.
 *
 * Node cannot bind a socket to an interface (no SO_BINDTODEVICE or
 * IP_BOUND_IF), so a road's socket is bound to its interface's address
 * instead: where two interfaces both hold 169.254/16 addresses, the system
 * may still send by the other one; such a read fails its connect or its
 * pin, and the next road is tried.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { request, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { connect as netConnect, isIPv6, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect, type TLSSocket } from "node:tls";

import { DeltaDown } from "./errors.js";
import * as wire from "./wire.js";

/** A road's connect timeout in ms, as Delta gives it in direct.json
 * (connect_timeout_ms); 3 s from an older Delta's. */
export function connectTimeout(rd: DirectRoad): number {
  return rd.connect_timeout_ms !== undefined && rd.connect_timeout_ms > 0 ? rd.connect_timeout_ms : 3000;
}

/** One lan or thunderbolt road to a peer, as direct.json has it. */
export interface DirectRoad {
  road: string;
  address: string;
  interface?: string;
  pin?: string;
  connect_timeout_ms?: number;
}

interface DirectPeer {
  name: string;
  roads?: DirectRoad[];
  ticket?: string;
  expires?: string;
}

interface DirectFile {
  client_cert?: string;
  client_key?: string;
  peers?: DirectPeer[];
}

/** The address a road's socket binds to: its interface's, of the family of
 * the peer's address ("" when the road names no interface or it has none). */
export function localAddressFor(iface: string | undefined, peerHost: string): string {
  if (!iface) return "";
  const want = isIPv6(peerHost) ? "IPv6" : "IPv4";
  for (const a of networkInterfaces()[iface] ?? []) {
    if (a.family === want) return a.address;
  }
  return "";
}

/** Splits "host:port" or "[v6]:port". */
export function splitHostPort(addr: string): [string, number] {
  const i = addr.lastIndexOf(":");
  return [addr.slice(0, i).replace(/^\[|\]$/g, ""), Number(addr.slice(i + 1))];
}

/** A connection on one road: bound to its interface's address, TLS pinned
 * to the peer's certificate when the road has a pin (checked before
 * anything is sent), plain TCP otherwise. */
function dialRoad(rd: DirectRoad, cert: { cert: Buffer; key: Buffer } | undefined): Promise<Socket> {
  const [host, port] = splitHostPort(rd.address);
  const timeout = connectTimeout(rd);
  return new Promise<Socket>((resolve, reject) => {
    const localAddress = localAddressFor(rd.interface, host);
    if (rd.interface && !localAddress) {
      reject(new Error(`interface ${rd.interface} has no address`));
      return;
    }
    const raw = netConnect({ host, port, noDelay: true, ...(localAddress ? { localAddress } : {}) });
    let sock: Socket | TLSSocket = raw;
    const timer = setTimeout(() => fail(new Error(`no connection within ${timeout / 1000} s`)), timeout);
    const fail = (e: Error): void => {
      clearTimeout(timer);
      sock.destroy();
      raw.destroy();
      reject(e);
    };
    raw.once("error", fail);
    raw.once("connect", () => {
      if (!rd.pin) {
        clearTimeout(timer);
        raw.removeListener("error", fail);
        resolve(raw);
        return;
      }
      if (!cert) {
        fail(new Error("the road is pinned TLS and this computer's certificate is not named"));
        return;
      }
      // The pin below is the check: the peer's certificate is self-signed.
      const t = tlsConnect({ socket: raw, cert: cert.cert, key: cert.key, minVersion: "TLSv1.3", rejectUnauthorized: false, servername: "" });
      sock = t;
      t.once("error", fail);
      t.once("secureConnect", () => {
        const der = t.getPeerCertificate(false)?.raw;
        const got = der ? createHash("sha256").update(der).digest("hex") : "";
        if (got !== rd.pin) {
          fail(new Error(got ? `the certificate at ${rd.address} is ${got}, not the pinned ${rd.pin}` : "the peer presented no certificate"));
          return;
        }
        clearTimeout(timer);
        raw.removeListener("error", fail);
        t.removeListener("error", fail);
        resolve(t);
      });
    });
  });
}

/**
 * Reads path from app on peer without this computer's Delta, which is down
 * (down says why). Resolves to the answer and the road it came over;
 * rejects with {@link DeltaDown} naming why when it cannot (no direct.json,
 * no road, no fresh ticket, the tailnet road asked for).
 *
 * @internal
 */
export async function readDirect(c: { stateDir: string; now: () => number }, down: DeltaDown, peer: string, app: string, path: string,
  h: Record<string, string>): Promise<{ res: IncomingMessage; road: string }> {
  const because = (why: string): DeltaDown =>
    new DeltaDown(`${down.detail}; and it cannot be read around: ${why}`, { stateDir: down.stateDir, url: down.url });
  const file = join(c.stateDir, wire.DIRECT_FILE);
  let d: DirectFile;
  try {
    d = JSON.parse(readFileSync(file, "utf8")) as DirectFile;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw because(`there is no ${wire.DIRECT_FILE} (Delta writes it while it runs)`);
    throw because(`${file} is not valid: ${(e as Error).message}`);
  }
  const dp = (d.peers ?? []).find((p) => p.name === peer);
  const route = Object.entries(h).find(([k]) => k.toLowerCase() === wire.H.route)?.[1] ?? "";
  if (route === "tailnet") throw because("the tailnet road lives inside Delta");
  if (!dp || !dp.roads?.length) throw because(`Delta knew no lan or thunderbolt road to ${peer} (the tailnet road lives inside Delta)`);
  if (!dp.ticket) throw because(`Delta held no read ticket for ${peer}`);
  const expires = dp.expires ? Date.parse(dp.expires) : NaN;
  if (Number.isNaN(expires) || c.now() >= expires) {
    const at = Number.isNaN(expires) ? "an unknown time" : new Date(expires).toTimeString().slice(0, 8);
    throw because(`its read ticket for ${peer} expired at ${at} (Delta renews it every 5 minutes while it runs)`);
  }
  let cert: { cert: Buffer; key: Buffer } | undefined;
  if (d.client_cert) {
    try {
      cert = { cert: readFileSync(join(c.stateDir, d.client_cert)), key: readFileSync(join(c.stateDir, d.client_key ?? "")) };
    } catch (e) {
      throw because(`this computer's certificate cannot be read: ${(e as Error).message}`);
    }
  }
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    const l = k.toLowerCase();
    if (l === wire.H.timeout || l === wire.H.app || !(l.startsWith("x-delta-") || l === "authorization" || l === "cookie")) out[k] = v;
  }
  out.Authorization = "Delta " + dp.ticket;
  const tried: string[] = [];
  for (const rd of dp.roads) {
    if (route && rd.road !== route) continue;
    if (tried.length === 2) break; // one fall-back, as Delta's
    let res: IncomingMessage;
    const [host, port] = splitHostPort(rd.address);
    try {
      const sock = await dialRoad(rd, cert);
      res = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = request({ method: "GET", path: `/delta/v1/apps/${encodeURIComponent(app)}${path}`, headers: out, createConnection: () => sock, host, port });
        req.once("response", resolve);
        req.once("error", reject);
        req.end();
      });
    } catch (e) {
      tried.push(`${rd.road} (${rd.address}): ${(e as Error).message}`);
      continue;
    }
    const o = wire.header(res.headers, wire.H.outcome);
    if (o === "unauthorized" || o === "forbidden") {
      // The door refused the read ticket: the road's failure, as Delta counts a door's refusal.
      res.destroy();
      tried.push(`${rd.road} (${rd.address}): its door refused the read ticket (${res.statusCode})`);
      continue;
    }
    if (o === "app_not_found") res.headers[wire.H.outcome] = "not_found"; // the owner's words, as the local API says them
    if (o === "app_unavailable") res.headers[wire.H.outcome] = "unavailable";
    res.headers[wire.H.direct] = "true";
    return { res, road: rd.road };
  }
  if (!tried.length) throw because(`Delta knew no ${route} road to ${peer}`);
  throw because(`${peer} did not answer on ${tried.join("; ")}`);
}
