// An emulated network hop for RESP clients, which the gateway's --latency-ms cannot reach:
// a TCP proxy in front of redis-server that delays every chunk by half the round trip in
// each direction, in order.
import { createConnection, createServer, type Socket } from "node:net";

export interface TcpHop {
  port: number;
  close(): Promise<void>;
}

/** Forwards `from` to `to`, each chunk `delayMs` later, never reordering. */
function delayed(from: Socket, to: Socket, delayMs: number) {
  let lastDueAt = 0;
  from.on("data", (chunk) => {
    lastDueAt = Math.max(Date.now() + delayMs, lastDueAt);
    setTimeout(() => to.writable && to.write(chunk), lastDueAt - Date.now());
  });
  from.on("close", () => to.destroy());
  from.on("error", () => to.destroy());
}

export async function startTcpHop(targetPort: number, roundTripMs: number): Promise<TcpHop> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ port: targetPort, host: "127.0.0.1" });
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true);
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    }
    delayed(client, upstream, roundTripMs / 2);
    delayed(upstream, client, roundTripMs / 2);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
