// @ts-check
// The console's settings: what this deployment tells the storefront (GET /api/config), in
// the shop's words: local sign-in, the shops that may embed the storefront, the human check.
import { call } from "./lib/api.js";
import { $, factItems, say } from "./lib/console-page.js";
import { humanCheckIn } from "./lib/human-check.js";

/** @param {[string, string][]} facts */
function renderFacts(facts) {
  $("shop-settings").replaceChildren(...factItems(facts));
}

/** Reads the deployment's settings into the section. */
export async function loadShopSettings() {
  const answer = await call("", "/api/config");
  if (answer.status !== 200)
    return say("settings-status", `The shop's settings cannot be read right now (${answer.message}).`, "bad");
  const config = answer.body;
  say("settings-status", "");
  renderFacts([
    [
      "Sign-in on the storefront",
      config.devLogin ? "local: any name, for trying things out (npm start)" : "by the shop's own accounts",
    ],
    [
      "Shops that may embed the storefront",
      config.allowedOrigins.length > 0 ? config.allowedOrigins.join(", ") : "none (it runs on its own pages only)",
    ],
    ["Human check, for sales that ask for it", humanCheckIn(config)],
  ]);
}
