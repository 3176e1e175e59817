// A shop's identity provider as the Worker meets it: a JWKS over HTTP on loopback, with one
// RS256 and one ES256 signing key. Tests sign with the private halves; the server counts how
// often the set is fetched, so tests can see the Worker keep it in the isolate.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface SigningJwk extends JsonWebKey {
  kid: string;
  alg: "RS256" | "ES256";
}

export interface IdentityProvider {
  jwksUrl: string;
  /** Private keys, each with its kid and alg. */
  signingKeys: SigningJwk[];
  stop(): Promise<void>;
}

async function keyPair(alg: SigningJwk["alg"], kid: string): Promise<{ privateJwk: SigningJwk; publicJwk: SigningJwk }> {
  const params =
    alg === "RS256"
      ? { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }
      : { name: "ECDSA", namedCurve: "P-256" };
  const pair = (await crypto.subtle.generateKey(params, true, ["sign", "verify"])) as CryptoKeyPair;
  const privateJwk = { ...(await crypto.subtle.exportKey("jwk", pair.privateKey)), kid, alg };
  const publicJwk = { ...(await crypto.subtle.exportKey("jwk", pair.publicKey)), kid, alg, use: "sig" };
  return { privateJwk, publicJwk };
}

export async function startIdentityProvider(): Promise<IdentityProvider> {
  const keys = await Promise.all([keyPair("RS256", "shop-rsa-1"), keyPair("ES256", "shop-ec-1")]);
  const jwks = JSON.stringify({ keys: keys.map((k) => k.publicJwk) });
  let fetches = 0;
  const server = createServer((req, res) => {
    const path = req.url?.split("?")[0];
    if (path === "/jwks.json") {
      fetches++;
      res.writeHead(200, { "content-type": "application/json" }).end(jwks);
    } else if (path === "/fetches") {
      res.writeHead(200, { "content-type": "application/json" }).end(String(fetches));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
    signingKeys: keys.map((k) => k.privateJwk),
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
