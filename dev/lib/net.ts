// Loopback ports for throw-away servers, and loopback Host names for servers that must not
// answer a rebound DNS name.
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { createServer, Socket } from "node:net";

export { hostName, isLoopbackHost } from "../../src/shared/loopback.ts";

/**
 * A port nothing listens on right now, below the kernel's ephemeral range. A port the OS hands
 * out for port 0 comes from that range, which is also where every outgoing connection gets its
 * local port: with crowds opening thousands of connections a second beside it, one took the
 * port between this pick and the server's listen (EADDRINUSE). Below the range only another
 * server can take it.
 */
export async function freePort(): Promise<number> {
  const below = ephemeralRangeStart();
  const lowest = 10_000;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = lowest + Math.floor(Math.random() * (below - lowest));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port found between ${lowest} and ${below - 1}`);
}

/** Where the kernel's ephemeral ports start (Linux's default when it cannot be read). */
function ephemeralRangeStart(): number {
  try {
    const start = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return start > 10_001 ? start : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.connect(port, "127.0.0.1");
  });
}

/**
 * An HTTP request to 127.0.0.1:`port` carrying `host` as its Host header, as a web page whose
 * DNS name was rebound to this machine would send it (fetch never sends a Host of our choosing).
 */
export function requestAsHost(
  port: number,
  host: string,
  {
    method = "GET",
    path = "/",
    headers = {},
    body,
  }: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers: { ...headers, Host: host } }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.once("error", reject);
    req.end(body);
  });
}
