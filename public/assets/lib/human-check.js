// @ts-check
// Cloudflare Turnstile on a sale that asks for the human check: Cloudflare's script is loaded
// only then (public/_headers lets it in), the widget is rendered with the sale's action, and
// its token goes with the checkout in the Human-Check header. A token passes once: after each
// checkout the widget is reset for a fresh one.

const SCRIPT_URL = "https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit";

/** @typedef {{ render(el: HTMLElement, options: Record<string, unknown>): string, getResponse(id: string): string | undefined, reset(id: string): void }} Turnstile */

/** @type {Promise<Turnstile> | undefined} */
let loading;

/** Cloudflare's script, added to the page the first time a sale needs it. */
function turnstile() {
  loading ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = SCRIPT_URL;
    script.async = true;
    script.onload = () => {
      const api = /** @type {{ turnstile?: Turnstile }} */ (/** @type {unknown} */ (window)).turnstile;
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

export class HumanCheck {
  /** @type {string | undefined} */
  widgetId;
  /** @type {Turnstile | undefined} */
  api;

  /**
   * Renders the widget into `container` for the sale; `onChange` hears when a token comes or goes.
   * @param {HTMLElement} container @param {string} siteKey @param {string} saleId @param {() => void} onChange
   */
  async show(container, siteKey, saleId, onChange) {
    this.api = await turnstile();
    container.hidden = false;
    this.widgetId = this.api.render(container, {
      sitekey: siteKey,
      action: `sale-${saleId}`,
      callback: onChange,
      "expired-callback": onChange,
      "error-callback": onChange,
    });
  }

  /** The widget's token, or undefined while the check is not done. */
  token() {
    return this.widgetId === undefined ? undefined : this.api?.getResponse(this.widgetId) || undefined;
  }

  /** Spent: the widget asks again. */
  reset() {
    if (this.widgetId !== undefined) this.api?.reset(this.widgetId);
  }
}
