// The examples (examples/notes-owner.mjs, examples/notes-client.mjs) run as
// a person runs them, against two real Deltas: the owner on studio, the
// client on laptop. KIT_EXAMPLES names the folder to run them from (make
// package-check: a fresh folder with the packed kit installed, so that
// "delta-kit" is the installed package); by default this package's
// examples/, where "delta-kit" is this package itself.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

import { env, Pair, waitFor } from "./lab.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const EXAMPLES = process.env.KIT_EXAMPLES || join(HERE, "..", "examples");

function client(pair, ...args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(EXAMPLES, "notes-client.mjs"), "--state-dir", pair.laptop.dir, ...args], { env: env(), timeout: 60000 },
      (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
}

test("the notes example, both ways", async (t) => {
  if (process.env.KIT_EXAMPLES) {
    // The kit the example imports is the installed one: in EXAMPLES's
    // node_modules, or (KIT_FROM) the folder npm linked it from.
    const where = realpathSync(createRequire(join(EXAMPLES, "x.js")).resolve("delta-kit/package.json"));
    assert.ok(where.startsWith(realpathSync(process.env.KIT_FROM || EXAMPLES)), where);
  }
  const pair = await Pair.open();
  t.after(() => pair.close());
  const owner = spawn(process.execPath, [join(EXAMPLES, "notes-owner.mjs"), "--state-dir", pair.studio.dir], { env: env(), stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((r) => owner.once("exit", (code) => r(code)));
  t.after(() => owner.kill("SIGKILL"));
  const lines = createInterface({ input: owner.stdout })[Symbol.asyncIterator]();
  assert.match((await lines.next()).value ?? "", /notes: serving on/);

  let out = await client(pair, "studio", "add", "milk and bread");
  assert.equal(out.code, 0, out.stderr + out.stdout);
  assert.match(out.stdout, /added note 1 on studio \(call [0-9a-f-]+\)/);
  out = await client(pair, "studio", "list");
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /1 note\(s\) on studio, read through Delta/);
  assert.match(out.stdout, /1\. milk and bread {2}\(from laptop/);

  // Delta down on laptop: the list is read directly, the add refused.
  await pair.laptop.stop();
  await waitFor("laptop's local.json goes", () => !existsSync(join(pair.laptop.dir, "local.json")));
  out = await client(pair, "studio", "list");
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /read directly on the lan road, Delta being down/);
  out = await client(pair, "studio", "add", "eggs");
  assert.equal(out.code, 2, out.stderr + out.stdout);
  assert.match(out.stdout, /Delta is down/);
  assert.match(out.stdout, /nothing was sent/);

  // The owner unregisters when stopped.
  assert.match(pair.studio.cli("apps"), /notes/);
  owner.kill("SIGTERM");
  assert.equal(await exited, 0);
  assert.doesNotMatch(pair.studio.cli("apps"), /notes/);
});
