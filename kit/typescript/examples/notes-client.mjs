// A client of the notes app on another computer, in JavaScript on Node: it
// adds a note (a call, sent at most once) and lists the notes (a read).
//
//   node notes-client.mjs [--state-dir DIR] PEER add "text"
//   node notes-client.mjs [--state-dir DIR] PEER list
//
// Each outcome of a call is told apart, as an app must: the owner's answer;
// not carried out (safe to make again); outcome unknown (never resent here:
// Delta asks the owner by the request id, and this waits for its word).
// While Delta is down, "list" still reads directly from the peer.

import { parseArgs } from "node:util";

import { Client, DeltaDown, DeltaError, NotCarriedOut, NothingSent, OutcomeUnknown, newRequestId } from "delta-kit";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { "state-dir": { type: "string" }, wait: { type: "string", default: "60" } },
});
const [peer, verb, text] = positionals;
if (!peer || !["add", "list"].includes(verb) || (verb === "add" && !text)) {
  console.error('usage: notes-client.mjs [--state-dir DIR] [--wait SECONDS] PEER add "text" | PEER list');
  process.exit(2);
}

async function add(c) {
  const rid = newRequestId();
  // A real app keeps rid with the note before the call leaves, so that a
  // crash here still knows which call to ask Delta about.
  let a;
  try {
    a = await c.call(peer, "notes", "POST", "/notes", JSON.stringify({ text }), { requestId: rid, headers: { "Content-Type": "application/json" } });
  } catch (e) {
    if (e instanceof NothingSent) return console.log(`nothing was sent (${e.detail}); the note can be added again later`), 2;
    if (e instanceof NotCarriedOut) return console.log(`not carried out (${e.detail}); the note can be added again later`), 2;
    if (e instanceof OutcomeUnknown) {
      console.log(`outcome unknown for call ${e.requestId}: ${e.whatDeltaDoes}`);
      const rec = await c.waitSettled(rid, { timeoutMs: Number(opts.wait) * 1000 });
      console.log(`settled: ${rec.state}`);
      return rec.state === "carried_out" ? 0 : 3;
    }
    if (e instanceof DeltaDown) return console.log(`Delta is down: ${e.message}`), 2;
    throw e;
  }
  if (a.status !== 201) return console.log(`${peer}'s notes answered ${a.status}: ${a.body.toString().trim()}`), 1;
  const note = JSON.parse(a.body);
  console.log(`added note ${note.id} on ${peer} (call ${rid}${a.replayed ? ", replayed" : ""})`);
  return 0;
}

async function list(c) {
  const r = await c.get(peer, "notes", "/notes");
  const how = r.direct ? `directly on the ${r.road} road, Delta being down` : r.stale ? "from Delta's cache, stale" : "through Delta";
  const notes = JSON.parse(r.body);
  console.log(`${notes.length} note(s) on ${peer}, read ${how}:`);
  for (const n of notes) console.log(`  ${n.id}. ${n.text}  (from ${n.from || "?"}, call ${n.request_id || "-"})`);
  return 0;
}

let c;
try {
  c = new Client({ stateDir: opts["state-dir"], app: "notes-client" });
  process.exitCode = verb === "add" ? await add(c) : await list(c);
} catch (e) {
  if (!(e instanceof DeltaError) && e.code !== "ETIMEDOUT") throw e;
  console.error(`notes: ${e.message}`);
  process.exitCode = 1;
} finally {
  c?.close();
}
