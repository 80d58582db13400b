// Two real Deltas as processes, laptop and studio, in static mode on
// loopback, for the kit's tests: configs written by `delta init --static`
// and `delta pair`, as a person writes them (every road TLS pinned to the
// computers' IDs), and each Delta started with `delta --headless`.

import { execFileSync, spawn } from "node:child_process";
import { accessSync, constants, existsSync, mkdtempSync, openSync, readFileSync, rmSync, unlinkSync, closeSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = join(HERE, "..", "..", "..");

/** The delta binary: DELTA_BIN, else the repository's bin/delta (make build writes it). */
export function deltaBin() {
  const b = process.env.DELTA_BIN || join(REPO, "bin", "delta");
  try {
    accessSync(b, constants.X_OK);
  } catch {
    throw new Error(`no delta binary at ${b}: run make build (or set DELTA_BIN)`);
  }
  return b;
}

export function env() {
  const e = { ...process.env, TS_NO_LOGS_NO_SUPPORT: "true", DELTA_DISCOVERY: "off" }; // no announcements on the machine's networks
  delete e.DELTA_STATE_DIR;
  return e;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Waits until cond() holds, polling; fails naming what did not happen. */
export async function waitFor(what, cond, timeoutMs = 20000) {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One Delta process on a state folder. */
export class Delta {
  constructor(name, dir, log) {
    this.name = name;
    this.dir = dir;
    this.log = log;
    this.proc = null;
    this.exited = null;
  }

  async start() {
    if (existsSync(join(this.dir, "local.json"))) unlinkSync(join(this.dir, "local.json"));
    const fd = openSync(this.log, "a");
    this.proc = spawn(deltaBin(), ["--headless", "--state-dir", this.dir, "--listen", "127.0.0.1:0"], { stdio: ["ignore", fd, fd], env: env() });
    closeSync(fd);
    this.exited = new Promise((resolve) => this.proc.once("exit", (code, sig) => resolve(code ?? sig)));
    let gone = null;
    this.exited.then((c) => { gone = c; });
    await waitFor(`${this.name}'s Delta writes local.json (log ${this.log})`, () => existsSync(join(this.dir, "local.json")) || gone !== null);
    if (gone !== null) throw new Error(`${this.name}'s Delta exited ${gone}: ${readFileSync(this.log, "utf8").slice(-2000)}`);
  }

  /** Stops it (SIGTERM: a clean stop, which keeps direct.json) and waits for it. */
  async stop(sig = "SIGTERM") {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill(sig);
    const t = setTimeout(() => this.proc.kill("SIGKILL"), 20000);
    await this.exited;
    clearTimeout(t);
  }

  /** Runs the command line against this Delta. */
  cli(...args) {
    return execFileSync(deltaBin(), [...args, "--state-dir", this.dir], { env: env(), timeout: 60000 }).toString();
  }

  /** Its peak resident memory (VmHWM), KiB. */
  rssKib() {
    const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${this.proc.pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  }
}

/** laptop and studio, each knowing the other on the lan road. */
export class Pair {
  static async open() {
    const p = new Pair();
    p.root = mkdtempSync(join(tmpdir(), "delta-kit-ts-"));
    const pa = await freePort();
    const pb = await freePort();
    p.laptop = new Delta("laptop", join(p.root, "laptop"), join(p.root, "laptop.log"));
    p.studio = new Delta("studio", join(p.root, "studio"), join(p.root, "studio.log"));
    const b = deltaBin();
    const run = (...args) => execFileSync(b, args, { env: env(), stdio: ["ignore", "pipe", "pipe"] }).toString().trim();
    // As a person pairs them: laptop's init, studio's init naming laptop's
    // ID, then laptop told studio's ID (delta pair). Every road is TLS
    // pinned to the IDs.
    run("init", "--static", "--state-dir", p.laptop.dir, "--name", "laptop", "--peer-listen", `127.0.0.1:${pa}`, "--peer", `studio=127.0.0.1:${pb}`);
    const laptopId = run("id", "--state-dir", p.laptop.dir);
    run("init", "--static", "--state-dir", p.studio.dir, "--name", "studio", "--peer-listen", `127.0.0.1:${pb}`, "--peer", `laptop=${laptopId}@127.0.0.1:${pa}`);
    run("pair", `studio=${run("id", "--state-dir", p.studio.dir)}@127.0.0.1:${pb}`, "--state-dir", p.laptop.dir);
    try {
      await p.laptop.start();
      await p.studio.start();
    } catch (e) {
      await p.close();
      throw e;
    }
    return p;
  }

  async close() {
    await this.laptop?.stop();
    await this.studio?.stop();
    if (process.env.DELTA_KEEP) console.log("kept", this.root);
    else rmSync(this.root, { recursive: true, force: true });
  }
}
