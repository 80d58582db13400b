// The TypeScript kit against two real Deltas as processes (test/lab.mjs):
// every outcome type, a real outcome_unknown reconciled and waited for,
// 200 MiB both ways with flat memory, the squatter, reads around a down
// Delta, the owner handler wrapper, forwards.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";

import {
  APIError, BadInput, Client, Conflict, Cut, DeltaDown, NotCarriedOut, NotDelta, NothingSent, OutcomeUnknown, State, Unavailable,
  newRequestId, outcomeType,
} from "../dist/index.js";
import { Pair, waitFor } from "./lab.mjs";
import { OwnerApp, pattern, patternSha256 } from "./ownerapp.mjs";

/** A plain request (no kit) to url, for the owner wrapper's refusals. */
function plain(url, headers = {}) {
  return new Promise((resolve, reject) => {
    request(url, { headers, agent: false }, async (res) => {
      const parts = [];
      for await (const b of res) parts.push(b);
      resolve({ status: res.statusCode, body: Buffer.concat(parts).toString() });
    }).once("error", reject).end();
  });
}

describe("with two Deltas", () => {
  let pair;
  let app;
  let c;

  before(async () => {
    pair = await Pair.open();
    app = await OwnerApp.open();
    const owner = new Client({ stateDir: pair.studio.dir, app: "kit-test-owner" });
    app.secret = (await owner.registerApp("notes", app.url)).secret;
    owner.close();
    c = new Client({ stateDir: pair.laptop.dir, app: "kit-test" });
  });

  after(async () => {
    c?.close();
    await app?.close();
    await pair?.close();
  });

  test("an answer, a replay and a read", async () => {
    const rid = newRequestId();
    const a = await c.call("studio", "notes", "POST", "/notes", "water the plants", { requestId: rid });
    assert.deepEqual([a.status, a.body.toString(), a.requestId, a.road, a.replayed], [201, "water the plants", rid, "lan", false]);
    const again = await c.call("studio", "notes", "POST", "/notes", "water the plants", { requestId: rid });
    assert.equal(again.replayed, true);
    assert.equal(app.effects.get(rid), 1, "the call was carried out twice");
    const r = await c.get("studio", "notes", "/notes");
    assert.equal(r.status, 200);
    assert.ok(JSON.parse(r.body).includes("water the plants"));
    assert.equal(r.stale || r.direct, false);
    // What fetch users reach for.
    assert.deepEqual(await r.json(), JSON.parse(r.body));
    assert.equal(await a.text(), "water the plants");
    const inc = JSON.parse((await c.call("studio", "notes", "POST", "/incoming", "")).body);
    assert.deepEqual([inc.caller, inc.callerApp], ["laptop", "kit-test"]);
    const rec = await c.callRecord(rid);
    assert.deepEqual([rec.state, rec.callerApp, rec.settled], ["answered", "kit-test", true]);
    assert.equal(rec.attempts[0].first_byte_written, true);
  });

  test("nothing sent, and not carried out", async () => {
    const e = await c.call("studio-nowhere", "notes", "POST", "/notes", "x").then(() => null, (x) => x);
    assert.ok(e instanceof NothingSent, String(e));
    assert.deepEqual([e.outcome, e.status, outcomeType(e), e.nothingSent, e.notCarriedOut], ["not_found", 404, "nothing_sent", true, true]);
    const e2 = await c.call("studio", "nobody", "POST", "/x", "x").then(() => null, (x) => x);
    assert.ok(e2 instanceof NotCarriedOut && !(e2 instanceof NothingSent), String(e2));
    assert.deepEqual([outcomeType(e2), e2.peer], ["not_carried_out", "studio"]);
    await assert.rejects(c.get("studio", "nobody", "/x"), Unavailable);
  });

  test("bad input", async () => {
    const e = await c.call("studio", "notes", "POST", "/notes", "x", { requestId: "not an id" }).then(() => null, (x) => x);
    assert.ok(e instanceof BadInput);
    assert.equal(e.status, 0); // the kit's own check
    await assert.rejects(c.call("studio", "notes", "GET", "/notes"), BadInput);
    const d = await c.call("studio", "notes", "POST", "/notes", "x", { headers: { "X-Delta-Timeout": "soon" } }).then(() => null, (x) => x);
    assert.ok(d instanceof BadInput, String(d)); // Delta's
    assert.deepEqual([d.status, outcomeType(d)], [400, "bad_input"]);
    assert.match(d.detail, /nothing was sent/);
  });

  test("a request id in use for another request", async () => {
    const rid = newRequestId();
    await c.call("studio", "notes", "POST", "/notes", "one", { requestId: rid });
    const e = await c.call("studio", "notes", "POST", "/notes", "two", { requestId: rid }).then(() => null, (x) => x);
    assert.ok(e instanceof Conflict);
    assert.equal(e.requestId, rid);
  });

  test("an unknown outcome, reconciled and waited for", async () => {
    const rid = newRequestId();
    const e = await c.call("studio", "notes", "POST", "/hold/a", "late", { requestId: rid, timeoutMs: 300 }).then(() => null, (x) => x);
    assert.ok(e instanceof OutcomeUnknown, String(e));
    assert.deepEqual([e.requestId, e.peer, outcomeType(e)], [rid, "studio", "outcome_unknown"]);
    assert.match(e.whatDeltaDoes, /never sends it again/);
    assert.ok((await c.calls("unsettled")).some((r) => r.requestId === rid));
    assert.equal((await c.dismiss(rid)).dismissed, true);
    await assert.rejects(c.waitSettled(rid, { timeoutMs: 1000 }), { code: "ETIMEDOUT" });
    app.release("a");
    const rec = await c.waitSettled(rid, { timeoutMs: 60000 });
    assert.equal(rec.state, State.CarriedOut);
    assert.equal(rec.settled, true);
    assert.equal(rec.answer?.body.toString(), "late");
    // The kept answer is shaped as an Answer: node:http's header names, text().
    assert.deepEqual([rec.answer?.headers["content-type"], await rec.answer?.text(), rec.answer?.status], ["text/plain", "late", 201]);
    assert.equal(app.effects.get(rid), 1);
    // A person settles one the owner is still holding.
    const rid2 = newRequestId();
    await assert.rejects(c.call("studio", "notes", "POST", "/hold/b", "x", { requestId: rid2, timeoutMs: 300 }), OutcomeUnknown);
    assert.equal((await c.ask(rid2)).requestId, rid2);
    const rec2 = await c.settle(rid2, "not_carried_out", "I looked: nothing there");
    assert.deepEqual([rec2.state, rec2.settledBy], ["not_carried_out", "a person"]);
    app.release("b");
  });

  test("a body of unknown length goes chunked", async () => {
    async function* parts() { yield Buffer.from("abc"); yield Buffer.from("def"); }
    const a = await c.call("studio", "notes", "PUT", "/sink", parts());
    assert.deepEqual(JSON.parse(a.body), { size: 6, sha256: createHash("sha256").update("abcdef").digest("hex") });
  });

  test("an answer cut short", async () => {
    const e = await c.get("studio", "notes", "/broken").then(() => null, (x) => x);
    assert.ok(e instanceof Cut, String(e));
    assert.deepEqual([e.read, e.total, outcomeType(e)], [10, 1000, "cut"]);
  });

  test("status, apps and forwards", async () => {
    assert.match(JSON.stringify(await c.status()), /studio/);
    assert.deepEqual(await c.peerApps("studio"), [{ app: "notes" }]);
    const f = await c.forward("studio", "notes");
    assert.equal(f.open, true, JSON.stringify(f));
    const shared = await c.peerApps("studio");
    assert.deepEqual([shared[0].app, shared[0].forward.url], ["notes", f.url], JSON.stringify(shared));
    assert.ok(Array.isArray(await c.listening()));
    await c.call("studio", "notes", "POST", "/notes", "through a forward?");
    const got = await plain(f.url.replace(/\/$/, "") + "/notes");
    assert.ok(JSON.parse(got.body).includes("through a forward?"));
    assert.ok((await c.forwards()).some((x) => x.peer === "studio" && x.app === "notes"));
    await c.removeForward("studio", "notes");
    assert.deepEqual(await c.forwards(), []);
  });

  test("pairing", async () => {
    const p = await c.pairing();
    assert.deepEqual(p.peers.map((x) => x.name), ["studio"], JSON.stringify(p));
    assert.ok(p.self.id, JSON.stringify(p));
    assert.deepEqual(p.requests, []);
    await assert.rejects(c.pair("me", p.self.id, "127.0.0.1:1"), (e) => e instanceof APIError && e.outcome === "bad_request" && /own ID/.test(e.message));
    await assert.rejects(c.rename("not a name"), (e) => e instanceof APIError && e.outcome === "bad_request");
  });

  test("the owner wrapper refuses a request without the secret", async () => {
    for (const [hdr, why] of [[{}, "has no X-Delta-Forward-Secret"], [{ "X-Delta-Forward-Secret": "guess" }, "does not match"]]) {
      const r = await plain(app.url + "/notes", hdr);
      assert.equal(r.status, 403);
      assert.ok(JSON.parse(r.body).detail.includes(why));
    }
    assert.equal((await plain(app.url + "/notes", { "X-Delta-Forward-Secret": app.secret })).status, 200);
  });

  test("200 MiB both ways with flat memory", async (t) => {
    const n = Number(process.env.DELTA_KIT_MB ?? "200") * (1 << 20);
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sample = () => { peak = Math.max(peak, process.memoryUsage().rss); };
    const h = createHash("sha256");
    let got = 0;
    const r = await c.stream("studio", "notes", `/big?n=${n}`, { progress: sample });
    assert.equal(r.total, n);
    for await (const b of r) {
      h.update(b);
      got += b.length;
    }
    assert.deepEqual([got, h.digest("hex")], [n, patternSha256(n)]);
    const sent = [];
    const a = await c.call("studio", "notes", "PUT", "/sink", Readable.from(pattern(n)), {
      size: n, progress: (d) => { sent.push(d); sample(); },
    });
    assert.deepEqual(JSON.parse(a.body), { size: n, sha256: patternSha256(n) });
    assert.equal(sent.at(-1), n);
    const grew = (peak - before) / (1 << 20);
    const note = `${n >> 20} MiB read and ${n >> 20} MiB call: this process's RSS peaked ${grew.toFixed(1)} MiB above where it began; ` +
      `peak RSS of laptop's Delta ${(pair.laptop.rssKib() / 1024).toFixed(1)} MiB, studio's ${(pair.studio.rssKib() / 1024).toFixed(1)} MiB`;
    t.diagnostic(note);
    console.log("note:", note);
    assert.ok(grew < 96, note); // a body held whole would be 200 MiB
  });

  test("while laptop's Delta is down: a read goes around it, a call is refused", async () => {
    await c.call("studio", "notes", "POST", "/notes", "before the stop");
    await pair.laptop.stop();
    await waitFor("laptop's local.json goes", () => !existsSync(join(pair.laptop.dir, "local.json")));
    const down = new Client({ stateDir: pair.laptop.dir });
    const r = await down.get("studio", "notes", "/notes");
    assert.equal(r.direct, true);
    assert.deepEqual([r.status, r.road], [200, "lan"]);
    assert.ok(JSON.parse(r.body).includes("before the stop"));
    const rid = newRequestId();
    const e = await down.call("studio", "notes", "POST", "/notes", "while down", { requestId: rid }).then(() => null, (x) => x);
    assert.ok(e instanceof DeltaDown, String(e));
    assert.deepEqual([e.requestId, outcomeType(e)], [rid, "delta_down"]);
    assert.match(e.message, /nothing was sent/);
    assert.ok(!JSON.parse((await down.get("studio", "notes", "/notes")).body).includes("while down"));
    await assert.rejects(down.status(), DeltaDown);
    await assert.rejects(down.get("studio", "notes", "/notes", { route: "tailnet" }), /the tailnet road lives inside Delta/);
    down.close();
  });
});

test("new Client() never throws; the first request says Delta is down", async () => {
  // As fetch and new Agent(): making one never fails; a request does.
  const c = new Client({ stateDir: join(tmpdir(), "delta-no-such-folder-" + process.pid) });
  const e = await c.call("studio", "notes", "POST", "/notes", "x").then(() => null, (x) => x);
  assert.ok(e instanceof DeltaDown, String(e));
  assert.match(e.message, /nothing was sent/);
  await assert.rejects(c.get("studio", "notes", "/notes"), DeltaDown);
  assert.equal(c.url, "");
  c.close();
});

test("an option a method does not take is refused, naming the one meant", async () => {
  const c = new Client({ stateDir: join(tmpdir(), "delta-no-such-folder-" + process.pid) });
  // Seconds where milliseconds are meant would be silently ignored in plain JavaScript.
  await assert.rejects(c.call("studio", "notes", "POST", "/notes", "x", { timeout: 2 }), (e) =>
    e instanceof TypeError && /unknown option "timeout" \(did you mean "timeoutMs"\? times are in milliseconds\)/.test(e.message) && /nothing was sent/.test(e.message));
  await assert.rejects(c.waitSettled("x", { timeout: 5 }), /unknown option "timeout" \(did you mean "timeoutMs"/);
  await assert.rejects(c.get("studio", "notes", "/", { rout: "lan" }), /did you mean "route"/);
  assert.throws(() => new Client({ statedir: "/tmp" }), /unknown option "statedir" \(did you mean "stateDir"/);
  c.close();
});

test("a listener on a dead Delta's port gets no token and no request", async () => {
  const d = mkdtempSync(join(tmpdir(), "delta-squat-"));
  try {
    for (const answer of ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
      'HTTP/1.1 200 OK\r\nX-Delta-Outcome: answered\r\nContent-Length: 15\r\n\r\n{"proof": "00"}']) {
      const seen = [];
      const srv = createServer((s) => {
        s.on("data", (b) => { seen.push(b); s.write(answer); });
        s.on("error", () => {});
      });
      await new Promise((r) => srv.listen(0, "127.0.0.1", r));
      writeFileSync(join(d, "local.json"), JSON.stringify({ url: `http://127.0.0.1:${srv.address().port}`, pid: process.pid }));
      writeFileSync(join(d, "local-token"), "the-secret-token");
      const c = new Client({ stateDir: d });
      const e = await c.call("studio", "notes", "POST", "/notes", "for Delta only").then(() => null, (x) => x);
      assert.ok(e instanceof NotDelta, String(e));
      assert.ok(e instanceof DeltaDown && e.requestId);
      c.close();
      srv.closeAllConnections?.();
      await new Promise((r) => srv.close(r));
      const all = Buffer.concat(seen).toString();
      assert.match(all, /\/v1\/proof\?nonce=/);
      for (const secret of ["the-secret-token", "Bearer", "for Delta only"]) assert.ok(!all.includes(secret), secret);
    }
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});
