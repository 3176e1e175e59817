// Loopback ports for throw-away servers, and loopback Host names for servers that must not
// answer a rebound DNS name.
import { request } from "node:http";
import { createServer, Socket } from "node:net";

export { hostName, isLoopbackHost } from "../../src/shared/loopback.ts";

/** A port nothing listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
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
