// An owner app for the kit's tests: node:http, wrapped in ownerHandler,
// on loopback.

import { createHash } from "node:crypto";
import { createServer } from "node:http";

import { ownerHandler } from "../dist/index.js";

const BLOCK = Buffer.alloc(256 << 10);
for (let i = 0; i < BLOCK.length; i++) BLOCK[i] = i & 0xff;

/** n bytes of a fixed pattern, in 256 KiB pieces, never held whole. */
export function* pattern(n) {
  while (n > 0) {
    const b = BLOCK.subarray(0, Math.min(n, BLOCK.length));
    n -= b.length;
    yield b;
  }
}

export function patternSha256(n) {
  const h = createHash("sha256");
  for (const b of pattern(n)) h.update(b);
  return h.digest("hex");
}

async function readAll(req) {
  const parts = [];
  for await (const b of req) parts.push(b);
  return Buffer.concat(parts);
}

export class OwnerApp {
  static async open() {
    const a = new OwnerApp();
    a.notes = [];
    a.effects = new Map();
    a.holds = new Map();
    a.secret = "";
    a.server = createServer((req, res) => ownerHandler(a.secret, (rq, rs, inc) => a.handle(rq, rs, inc))(req, res));
    await new Promise((r) => a.server.listen(0, "127.0.0.1", r));
    a.url = `http://127.0.0.1:${a.server.address().port}`;
    return a;
  }

  hold(k) {
    if (!this.holds.has(k)) {
      let release;
      const p = new Promise((r) => { release = r; });
      this.holds.set(k, { p, release });
    }
    return this.holds.get(k);
  }

  release(k) {
    this.hold(k).release();
  }

  effect(rid) {
    this.effects.set(rid, (this.effects.get(rid) ?? 0) + 1);
  }

  async close() {
    for (const h of this.holds.values()) h.release();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  async handle(req, res, inc) {
    const u = new URL(req.url, "http://x");
    const reply = (status, body, type = "text/plain") => {
      res.writeHead(status, { "Content-Type": type, "Content-Length": Buffer.byteLength(body) });
      res.end(body);
    };
    if (u.pathname === "/notes" && req.method === "GET") return reply(200, JSON.stringify(this.notes), "application/json");
    if (u.pathname === "/notes" && req.method === "POST") {
      const note = (await readAll(req)).toString();
      this.notes.push(note);
      this.effect(inc.requestId);
      return reply(201, note);
    }
    if (u.pathname.startsWith("/hold/")) {
      const data = await readAll(req);
      await this.hold(u.pathname.slice(6)).p;
      this.effect(inc.requestId);
      return reply(201, data);
    }
    if (u.pathname === "/incoming") return reply(200, JSON.stringify(inc), "application/json");
    if (u.pathname === "/big" && req.method === "GET") {
      const n = Number(u.searchParams.get("n"));
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": n });
      for (const b of pattern(n)) {
        if (!res.write(b)) await new Promise((r) => res.once("drain", r));
      }
      return res.end();
    }
    if (u.pathname === "/broken") {
      res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": 1000 });
      res.write("0123456789", () => res.destroy()); // the app breaks its answer once the first bytes left
      return;
    }
    if (u.pathname === "/sink" && (req.method === "PUT" || req.method === "POST")) {
      const h = createHash("sha256");
      let size = 0;
      for await (const b of req) {
        h.update(b);
        size += b.length;
      }
      return reply(200, JSON.stringify({ size, sha256: h.digest("hex") }), "application/json");
    }
    return reply(404, "no such thing");
  }
}
