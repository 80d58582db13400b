// The shared contract tables: every recorded answer of Delta's becomes the
// outcome kit/contract/outcomes.json says, as in the Go and Python kits
// (each answer is served whole by a loopback listener and read by
// node:http, as the kit reads Delta's); and every operation, option,
// state, outcome type and answer field has the name, result and unit
// kit/contract/operations.json says (read from the kit itself and, for
// results, from its source by the TypeScript compiler).

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { get } from "node:http";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import ts from "typescript";

import { answerOf } from "../dist/client.js";
import * as kit from "../dist/index.js";
import { DeltaError, outcomeType } from "../dist/index.js";
import * as wire from "../dist/wire.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const TABLE = join(HERE, "..", "..", "contract", "outcomes.json");
const OPERATIONS = join(HERE, "..", "..", "contract", "operations.json");
const PATHS = join(HERE, "..", "..", "contract", "paths.json");
const ops = JSON.parse(readFileSync(OPERATIONS, "utf8"));

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
        for (const [k, attr] of [["nothing_sent", "nothingSent"], ["not_carried_out", "notCarriedOut"]]) {
          if (k in e) assert.equal(err[attr], e[k], k);
        }
        return;
      }
      assert.equal(e.type, "answer");
      const a = r.answer(await r.bytes());
      assert.equal(a.status, e.status);
      for (const [k, attr] of [["request_id", "requestId"], ["road", "road"], ["replayed", "replayed"], ["stale", "stale"], ["stale_reason", "staleReason"]]) {
        if (k in e) assert.equal(a[attr], e[k], k);
      }
      if ("body" in e) assert.equal(a.body.toString(), e.body);
      for (const [f, names] of Object.entries(ops.answer_fields)) {
        if (names?.typescript) assert.ok(names.typescript in a, `answer field ${f}: an Answer has no ${names.typescript}`);
      }
      if ("age_seconds" in e) assert.equal(a.age, e.age_seconds);
    });
  }
});

/** The return types of Client's methods, as the TypeScript compiler reads
 * the kit's source. */
function clientResults() {
  const program = ts.createProgram([join(HERE, "..", "src", "index.ts")], { strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext });
  const checker = program.getTypeChecker();
  const out = new Map();
  const src = program.getSourceFile(join(HERE, "..", "src", "client.ts"));
  ts.forEachChild(src, (n) => {
    if (!ts.isClassDeclaration(n) || n.name?.text !== "Client") return;
    for (const m of n.members) {
      if (!ts.isMethodDeclaration(m) || !m.name) continue;
      const sig = checker.getSignatureFromDeclaration(m);
      out.set(m.name.getText(src), checker.typeToString(checker.getReturnTypeOfSignature(sig)));
    }
  });
  return out;
}

test("the operations table", () => {
  assert.ok(ops.operations.length >= 20);
  const results = clientResults();
  for (const op of ops.operations) {
    const name = op.typescript;
    if (name === null) {
      assert.ok(op.why, `${op.op}: no TypeScript name and no why`);
      continue;
    }
    const isClass = name === "Client";
    const fn = isClass ? kit.Client : typeof kit.Client.prototype[name] === "function" ? kit.Client.prototype[name] : kit[name];
    assert.equal(typeof fn, "function", `${op.op}: the kit has no ${name}`);
    const want = op.result?.typescript;
    if (want && !isClass) assert.equal(results.get(name), `Promise<${want}>`, `${op.op}: ${name} returns ${results.get(name)}`);
    for (const o of op.options ?? []) {
      if (o.typescript === null) {
        assert.ok(o.why, `${op.op}: option ${o.option} has no TypeScript name and no why`);
        continue;
      }
      assert.ok(kit.OPTIONS[name]?.includes(o.typescript), `${op.op}: ${name} does not take ${o.typescript}`);
      if (o.unit?.typescript === "milliseconds") assert.match(o.typescript, /Ms$/, `${op.op}: ${o.typescript} is in milliseconds and says so`);
    }
  }
  for (const s of ops.states) {
    const camel = s.split("_").map((w) => w[0].toUpperCase() + w.slice(1)).join("");
    assert.equal(kit.State[camel], s, `state ${s}: State.${camel}`);
  }
  for (const [kind, names] of Object.entries(ops.outcomes)) {
    if (kind === "answer") continue; // an interface: the contract table's answers hold its fields
    assert.equal(typeof kit[names.typescript], "function", `outcome ${kind}: no ${names.typescript}`);
  }
});

// The kit's one table of the local API's paths, actions and headers is
// kit/contract/paths.json's, and no other /v1/ path is spelled in its
// sources.
test("the paths table", () => {
  const table = JSON.parse(readFileSync(PATHS, "utf8"));
  assert.deepEqual({ ...wire.PATHS }, table.paths);
  assert.deepEqual([...wire.ACTIONS], table.actions);
  const contractHeaders = new Set(Object.values(table.headers).map((h) => h.toLowerCase()));
  for (const [k, h] of Object.entries(wire.H)) {
    if (k !== "direct") assert.ok(contractHeaders.has(h), `wire.H.${k} (${h}) is not a header of contract/paths.json`);
  }
  assert.equal(wire.path("call_action", { id: "r 1/x", action: "ask" }), "/v1/calls/r%201%2Fx/ask");
  assert.throws(() => wire.path("forward", { peer: "studio" }), /needs more/);
  const src = join(HERE, "..", "src");
  for (const name of readdirSync(src).filter((n) => n.endsWith(".ts")).sort()) {
    const text = readFileSync(join(src, name), "utf8");
    for (const m of text.matchAll(/["'`](\/v1\/[^"'`]*)["'`]/g)) {
      assert.ok(name === "wire.ts" && Object.values(table.paths).includes(m[1]), `${name} spells the local API path ${m[1]}: wire.path() does`);
    }
  }
});
