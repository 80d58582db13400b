// The shared contract table (kit/contract/outcomes.json): every recorded
// answer of Delta's becomes the outcome the table says, as in the Go and
// Python kits. Each answer is served whole by a loopback listener and read
// by node:http, as the kit reads Delta's.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { get } from "node:http";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { answerOf } from "../dist/client.js";
import { DeltaError, outcomeType } from "../dist/index.js";

const TABLE = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "contract", "outcomes.json");

function raw(c) {
  const body = Buffer.from(typeof c.body === "string" ? c.body : JSON.stringify(c.body));
  let head = `HTTP/1.1 ${c.status} X\r\n`;
  for (const [k, v] of Object.entries(c.headers)) head += `${k}: ${v}\r\n`;
  head += `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}

test("the contract table", async (t) => {
  const cases = JSON.parse(readFileSync(TABLE, "utf8")).cases;
  assert.ok(cases.length >= 15);
  let answer = Buffer.alloc(0);
  const srv = createServer((s) => s.once("data", () => s.end(answer)));
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => srv.close());
  for (const c of cases) {
    await t.test(c.name, async () => {
      answer = raw(c);
      const res = await new Promise((resolve, reject) => get({ host: "127.0.0.1", port: srv.address().port, path: "/", agent: false }, resolve).once("error", reject));
      const e = c.expect;
      let r;
      try {
        r = await answerOf(res, c.request_id ?? "");
      } catch (err) {
        assert.ok(err instanceof DeltaError, String(err));
        assert.equal(outcomeType(err), e.type, err.message);
        assert.equal(err.status ?? c.status, e.status);
        for (const [k, attr] of [["outcome", "outcome"], ["request_id", "requestId"], ["peer", "peer"], ["road", "road"]]) {
          if (k in e) assert.equal(err[attr], e[k], k);
        }
        assert.ok(err.detail.includes(e.detail_contains ?? ""), err.detail);
        return;
      }
      assert.equal(e.type, "answer");
      const a = r.answer(await r.bytes());
      assert.equal(a.status, e.status);
      for (const [k, attr] of [["request_id", "requestId"], ["road", "road"], ["replayed", "replayed"], ["stale", "stale"], ["stale_reason", "staleReason"]]) {
        if (k in e) assert.equal(a[attr], e[k], k);
      }
      if ("body" in e) assert.equal(a.body.toString(), e.body);
      if ("age_seconds" in e) assert.equal(a.age, e.age_seconds);
    });
  }
});
