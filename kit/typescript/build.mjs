// build.mjs: builds dist/ with the kit's own pinned TypeScript (npm's
// "prepare", so that `npm install ./kit/typescript` works from a folder:
// npm links the folder and runs prepare there, but installs none of its
// devDependencies, so they are installed here first, from
// package-lock.json, when they are missing).
import { existsSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const tsc = `${here}node_modules/typescript/bin/tsc`;
if (!existsSync(tsc)) {
  console.error("delta-kit: installing its TypeScript compiler (npm ci) to build dist/");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  execFileSync(npm, ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: here, stdio: "inherit" });
}
execFileSync(process.execPath, [tsc, "-p", here], { stdio: "inherit" });
