// The notes owner app, in JavaScript on Node: it keeps notes in memory and
// serves them to the person's other computers through this computer's Delta.
//
//   GET  /notes   every note, oldest first
//   POST /notes   {"text": "…"} adds a note; 201 with the note
//
// It listens on loopback, registers itself with Delta as the app "notes",
// admits only requests that carry the forward secret Delta gave it
// (ownerHandler), and unregisters when stopped (Ctrl-C or SIGTERM).
//
//   node notes-owner.mjs [--state-dir DIR] [--name notes]

import { createServer } from "node:http";
import { parseArgs } from "node:util";

import { Client, DeltaError, ownerHandler } from "delta-kit";

const { values: args } = parseArgs({ options: { "state-dir": { type: "string" }, name: { type: "string", default: "notes" } } });

const notes = [];

async function handle(req, res, incoming) {
  const reply = (status, value) => {
    const body = JSON.stringify(value) + "\n";
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  };
  const path = new URL(req.url, "http://notes").pathname;
  if (path !== "/notes") return reply(404, { error: `no such path ${path}` });
  if (req.method === "GET") return reply(200, notes);
  if (req.method !== "POST") return reply(405, { error: `${req.method} is not GET or POST` });
  const parts = [];
  for await (const b of req) parts.push(b);
  let text;
  try {
    text = JSON.parse(Buffer.concat(parts).toString()).text;
    if (typeof text !== "string" || !text) throw new Error("text is not a non-empty string");
  } catch (e) {
    return reply(400, { error: `the body is not {"text": "…"}: ${e.message}` });
  }
  const note = { id: notes.length + 1, text, from: incoming.caller, request_id: incoming.requestId, created_at: new Date().toISOString() };
  notes.push(note);
  reply(201, note);
}

const client = new Client({ stateDir: args["state-dir"] });
let secret = "";
const server = createServer((req, res) => ownerHandler(secret, handle)(req, res));
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${server.address().port}`;
try {
  secret = (await client.registerApp(args.name, url)).secret;
} catch (e) {
  console.error(`notes: register with Delta: ${e.message}`);
  process.exit(1);
}
console.log(`notes: serving on ${url} as the app ${JSON.stringify(args.name)} of the Delta in ${client.stateDir}`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  server.closeAllConnections();
  server.close();
  try {
    await client.removeApp(args.name);
  } catch (e) {
    console.error(`notes: unregister from Delta: ${e instanceof DeltaError ? e.message : e}`);
    process.exitCode = 1;
  }
  client.close();
}
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
