// Who listens on a local TCP port, read from /proc (Linux): the socket's inode in
// /proc/net/tcp{,6}, then the process holding that inode among its open files. Written by
// hand because it is twenty lines and the alternatives (lsof, ss, fuser) may be missing.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const LISTEN = "0A";

function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, , state] = fields;
      if (!local || state !== LISTEN) continue;
      if (Number.parseInt(local.split(":").at(-1) ?? "", 16) === port) inodes.add(fields[9] as string);
    }
  }
  return inodes;
}

/** The process listening on `port` (pid and command line), or undefined when none can be found. */
export function portOwner(port: number): { pid: number; command: string } | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${entry}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode && inodes.has(inode)) return { pid: Number(entry), command: commandLine(Number(entry)) };
    }
  }
  return undefined;
}

/** A process's command line, or "" when it is gone. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}
