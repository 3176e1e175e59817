// @ts-check
// The human check on a sale that asks for it: a widget beside Buy (or Join the line) whose
// token goes with the request in the Human-Check header. A token passes once: after each use
// the widget is reset for a fresh one.
//
// In production it is Cloudflare Turnstile: Cloudflare's script is loaded only then
// (public/_headers lets it in), and the widget is rendered with the sale's action. Under
// `npm start` (local sign-in on, Cloudflare's published always-passing test site key) there is
// no Cloudflare to load it from, and its test widget's dummy token names no action, which the
// sale refuses: a local widget stands in, a checkbox whose token the local siteverify stand-in
// (dev/turnstile/siteverify.ts) reads the sale's action from, `<token>:<action>`.

const SCRIPT_URL = "https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit";

/** Cloudflare's published test site key that always passes, as npm start sets it (dev/turnstile/test-keys.ts). */
const TEST_SITE_KEY = "1x00000000000000000000AA";

/** The action the Worker checks a token against (src/admission/human-check.ts). @param {string} saleId */
const actionOf = (saleId) => `sale-${saleId}`;

/**
 * @typedef {object} HumanCheck
 * @property {(container: HTMLElement, saleId: string, onChange: () => void) => Promise<void>} show renders the widget; `onChange` hears when a token comes or goes
 * @property {() => string | undefined} token the widget's token, or undefined while the check is not done
 * @property {() => void} reset spent: the widget asks again
 */

/** @typedef {{ devLogin: boolean, turnstileSiteKey: string | null }} HumanCheckConfig the deployment's settings (GET /api/config) */

/** Whether the page stands in for Turnstile itself: npm start's local sign-in and test site key. @param {HumanCheckConfig} config */
const standsIn = (config) => config.devLogin && config.turnstileSiteKey === TEST_SITE_KEY;

/**
 * The human check this deployment uses.
 * @param {HumanCheckConfig} config
 * @returns {HumanCheck | undefined} undefined where no site key is set
 */
export function humanCheckFor(config) {
  if (!config.turnstileSiteKey) return undefined;
  return standsIn(config) ? new LocalCheck() : new Turnstile(config.turnstileSiteKey);
}

/** The human check this deployment uses, in words (the console's settings). @param {HumanCheckConfig} config */
export function humanCheckIn(config) {
  if (!config.turnstileSiteKey) return "not set up: a sale that asks for it cannot be bought";
  return standsIn(config)
    ? "a local stand-in for Cloudflare Turnstile (npm start): a checkbox"
    : `Cloudflare Turnstile, site key ${config.turnstileSiteKey}`;
}

/** @typedef {{ render(el: HTMLElement, options: Record<string, unknown>): string, getResponse(id: string): string | undefined, reset(id: string): void }} TurnstileApi */

/** @type {Promise<TurnstileApi> | undefined} */
let loading;

/** Cloudflare's script, added to the page the first time a sale needs it. */
function turnstileApi() {
  loading ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = SCRIPT_URL;
    script.async = true;
    script.onload = () => {
      const api = /** @type {{ turnstile?: TurnstileApi }} */ (/** @type {unknown} */ (window)).turnstile;
      if (api) resolve(api);
      else reject(new Error("Turnstile did not start"));
    };
    script.onerror = () => {
      loading = undefined;
      reject(new Error("Turnstile could not be loaded"));
    };
    document.head.append(script);
  });
  return loading;
}

/** @implements {HumanCheck} */
class Turnstile {
  /** @type {string | undefined} */
  widgetId;
  /** @type {TurnstileApi | undefined} */
  api;

  /** @param {string} siteKey */
  constructor(siteKey) {
    this.siteKey = siteKey;
  }

  /** @param {HTMLElement} container @param {string} saleId @param {() => void} onChange */
  async show(container, saleId, onChange) {
    this.api = await turnstileApi();
    container.hidden = false;
    this.widgetId = this.api.render(container, {
      sitekey: this.siteKey,
      action: actionOf(saleId),
      callback: onChange,
      "expired-callback": onChange,
      "error-callback": onChange,
    });
  }

  token() {
    return this.widgetId === undefined ? undefined : this.api?.getResponse(this.widgetId) || undefined;
  }

  reset() {
    if (this.widgetId !== undefined) this.api?.reset(this.widgetId);
  }
}

/** The local stand-in: a checkbox a person ticks, giving a token for the sale's action. @implements {HumanCheck} */
class LocalCheck {
  /** @type {string | undefined} */
  current;
  /** @type {HTMLInputElement | undefined} */
  box;

  /** @param {HTMLElement} container @param {string} saleId @param {() => void} onChange */
  async show(container, saleId, onChange) {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.id = `${container.id}-box`;
    box.addEventListener("change", () => {
      this.current = box.checked ? `stand-in.${crypto.randomUUID()}:${actionOf(saleId)}` : undefined;
      onChange();
    });
    const label = document.createElement("label");
    label.htmlFor = box.id;
    label.className = "choice";
    label.append(box, " Verify you are human");
    const note = document.createElement("p");
    note.className = "hint";
    note.textContent = "Local stand-in for Cloudflare Turnstile (npm start); a deployed shop shows Cloudflare's check here.";
    container.classList.add("local-check");
    container.replaceChildren(label, note);
    container.hidden = false;
    this.box = box;
  }

  token() {
    return this.current;
  }

  reset() {
    this.current = undefined;
    if (this.box) this.box.checked = false;
  }
}
