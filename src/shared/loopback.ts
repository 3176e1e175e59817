// Host names that can only mean this machine. A local server that answers other names can be
// driven by any web page whose DNS name its owner rebinds to 127.0.0.1 (DNS rebinding).

const IPV4_LOOPBACK = /^127\.(25[0-5]|2[0-4]\d|1?\d?\d)\.(25[0-5]|2[0-4]\d|1?\d?\d)\.(25[0-5]|2[0-4]\d|1?\d?\d)$/;

/** The host name of a Host header (`name`, `name:port`, `[v6]:port`), lower-cased, without the port. */
export function hostName(host: string): string {
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : (host.split(":", 1)[0] as string);
  return name.toLowerCase();
}

/** localhost and its subdomains (browsers never ask DNS for them), 127.0.0.0/8 and [::1]. */
export function isLoopbackHost(host: string): boolean {
  const name = hostName(host).replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost") || name === "[::1]" || IPV4_LOOPBACK.test(name);
}
