// @ts-check
// Who is buying: a JWT the shop issues. The page never makes one up; it takes it from
//   1. the URL fragment: /?sale=123#token=<jwt> (read once, then removed from the address bar),
//      used only once the visitor, shown whose token it is, confirms it is theirs: anyone can
//      make such a link with their own token, and followed blindly it would sign the visitor in
//      as its maker, who would own what the visitor then pays for (login CSRF),
//   2. the page's config: <meta name="flash-sale:token-url" content="/account/sale-token">, a
//      URL of the shop's own origin answering {"token": "<jwt>"} for its signed-in customer,
//   3. the shop's page around it: window.postMessage({type: "flash-sale:token", token}) from a
//      parent whose origin is in ALLOWED_ORIGINS (the page posts {type: "flash-sale:ready"}
//      when it listens, and {type: "flash-sale:token-expired"} when the API refuses the token),
//   4. local sign-in, where the server offers it (DEV_LOGIN).
// A token the visitor gave this page themselves (local sign-in, a link they confirmed) is kept
// for the tab in sessionStorage, so a reload in the middle of paying does not sign them out;
// it is gone when the tab closes, and never put in a URL. A shop's token is not kept: the shop
// hands it again on every load, and it replaces a kept one.
import { tabStorage } from "./tab-storage.js";

const TOKEN_URL = document.querySelector('meta[name="flash-sale:token-url"]')?.getAttribute("content") ?? "";
const KEPT_TOKEN = "flash-sale:token";

/**
 * The token's claims, for display and for forgetting an expired one: the server decides who
 * the buyer is and whether the token still holds.
 * @param {string} token
 * @returns {{ sub?: unknown, exp?: unknown }}
 */
function claimsOf(token) {
  try {
    const payload = token.split(".")[1] ?? "";
    return JSON.parse(atob(payload.replaceAll("-", "+").replaceAll("_", "/"))) ?? {};
  } catch {
    return {};
  }
}

/** The token's subject, for display only. @param {string} token */
function subjectOf(token) {
  const sub = claimsOf(token).sub;
  return typeof sub === "string" ? sub : "";
}

/** The token this tab kept, unless its expiry has passed. */
function keptToken() {
  const token = tabStorage.get(KEPT_TOKEN);
  const exp = token === undefined ? undefined : claimsOf(token).exp;
  if (typeof exp === "number" && exp * 1000 <= Date.now()) {
    tabStorage.remove(KEPT_TOKEN);
    return undefined;
  }
  return token;
}

/** A parent page to talk to, when the storefront is embedded. */
const parentWindow = window.parent !== window ? window.parent : undefined;

export class Identity {
  /** @type {string | undefined} */
  token;
  userId = "";
  /**
   * A token from the URL, waiting for the visitor to confirm it is theirs.
   * @type {{ token: string, userId: string } | undefined}
   */
  offered;

  /**
   * @param {(identity: Identity) => void} onChange the token, or the offer, changed
   */
  constructor(onChange) {
    this.onChange = onChange;
  }

  /**
   * @param {string | undefined} token
   * @param {{ keep?: boolean }} [options] keep: the visitor gave it here (kept for the tab)
   */
  set(token, { keep = false } = {}) {
    this.token = token || undefined;
    this.userId = token ? subjectOf(token) : "";
    if (this.token && keep) tabStorage.set(KEPT_TOKEN, this.token);
    else tabStorage.remove(KEPT_TOKEN);
    this.onChange(this);
  }

  /**
   * Listens to every source the deployment allows.
   * @param {string[]} allowedOrigins shops that may hand the page a token
   */
  async start(allowedOrigins) {
    const kept = keptToken();
    if (kept) this.set(kept, { keep: true });
    const fragment = new URLSearchParams(location.hash.slice(1));
    const fromFragment = fragment.get("token");
    if (fromFragment) {
      history.replaceState(history.state, "", location.pathname + location.search);
      this.offered = { token: fromFragment, userId: subjectOf(fromFragment) };
      this.onChange(this);
    }
    window.addEventListener("message", (event) => {
      if (!allowedOrigins.includes(event.origin)) return;
      const data = event.data;
      if (data?.type === "flash-sale:token" && typeof data.token === "string") this.set(data.token);
    });
    if (parentWindow && allowedOrigins.length > 0) parentWindow.postMessage({ type: "flash-sale:ready" }, "*");
    if (!this.token && TOKEN_URL) await this.fetchFromShop();
  }

  async fetchFromShop() {
    try {
      const res = await fetch(TOKEN_URL, { credentials: "include", headers: { Accept: "application/json" } });
      if (res.ok) this.set((await res.json()).token);
    } catch {
      // the shop could not be reached: the page says that a token is needed
    }
  }

  /** The visitor confirmed that the link's token is theirs: it becomes the page's token. */
  acceptOffer() {
    const offered = this.offered;
    this.offered = undefined;
    if (offered) this.set(offered.token, { keep: true });
  }

  /** The visitor said the link's token is not theirs: it is forgotten, unused. */
  declineOffer() {
    this.offered = undefined;
    this.onChange(this);
  }

  /** The API refused the token (expired or revoked): forget it and ask the shop again. */
  async expired() {
    this.set(undefined);
    parentWindow?.postMessage({ type: "flash-sale:token-expired" }, "*");
    if (TOKEN_URL) await this.fetchFromShop();
  }

  /** Whether the shop can hand the page a token without the buyer doing anything here. */
  get shopProvidesToken() {
    return Boolean(TOKEN_URL || parentWindow);
  }
}
