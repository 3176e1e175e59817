// Debian packages the local stack needs (redis-server, and Chromium's headless shell for the browser tests).
// When one is missing and we are root, it is installed with apt-get, its output kept in a
// log file and one line of progress printed; otherwise the error says exactly what to run.
import { execFileSync } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

function hasBinary(name: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Makes sure `binary` is on PATH, installing Debian's `pkg` when it is missing. */
export function ensureDebianPackage(binary: string, pkg: string): void {
  if (hasBinary(binary)) return;
  const command = `apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${pkg}`;
  if (process.getuid?.() !== 0)
    throw new Error(`${binary} is not installed. Install it with:\n  sudo ${command.replace("&& ", "&& sudo ")}`);
  const log = path.join(tmpdir(), `apt-install-${pkg}.log`);
  process.stderr.write(`${binary} is missing: installing Debian's ${pkg} with apt-get (log: ${log})... `);
  const fd = openSync(log, "w");
  try {
    execFileSync("sh", ["-c", command], { stdio: ["ignore", fd, fd] });
  } catch {
    process.stderr.write("failed\n");
    throw new Error(`installing ${pkg} failed; its apt-get output is in ${log}`);
  } finally {
    closeSync(fd);
  }
  process.stderr.write("done\n");
}
