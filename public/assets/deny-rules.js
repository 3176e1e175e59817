// @ts-check
// The console's deny rules: callers refused quietly (GET, POST /admin/deny-rules, DELETE
// /admin/deny-rules/:id). Kept apart from the sale's figures in admin.js, which hands in its
// authenticated caller.
import { $, row, say } from "./lib/console-page.js";

/** @typedef {import("./order-events.js").AdminCall} AdminCall */

/**
 * The deny rules section of the console.
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 */
export function denyRulesPanel(admin) {
  /** @param {any} rule */
  function ruleRow(rule) {
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove";
    remove.setAttribute("aria-label", `Remove the rule on ${rule.kind} ${rule.value}`);
    remove.addEventListener("click", async () => {
      const answer = await admin(`/admin/deny-rules/${rule.id}`, { method: "DELETE" });
      if (answer.status === 200) {
        render(answer.body.rules);
        say("deny-status", `Removed the rule on ${rule.kind} ${rule.value}.`, "good");
      } else if (answer.status !== 401) {
        say("deny-status", `Not removed: ${answer.message}`, "bad");
      }
    });
    const expires = rule.expiresAt ? new Date(rule.expiresAt).toLocaleString() : "never";
    const tr = row([rule.kind, rule.value, rule.note, expires].map((text) => [text, ""]));
    const td = document.createElement("td");
    td.append(remove);
    tr.append(td);
    return tr;
  }

  /** @param {any[]} rules */
  function render(rules) {
    $("deny-rows").replaceChildren(...rules.map(ruleRow));
    if (rules.length === 0) $("deny-rows").append(row([["No deny rules.", ""]], 5));
  }

  async function load() {
    const answer = await admin("/admin/deny-rules");
    if (answer.status === 200) render(answer.body.rules);
    else if (answer.status !== 401) say("deny-status", `The deny rules cannot be read right now (${answer.message}).`, "bad");
  }

  $("deny-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = /** @type {HTMLFormElement} */ (event.target);
    const data = new FormData(form);
    const text = (/** @type {string} */ name) => String(data.get(name) ?? "").trim();
    /** @type {Record<string, unknown>} */
    const body = { kind: text("kind"), value: text("value") };
    if (text("note")) body.note = text("note");
    if (text("expiresAt")) body.expiresAt = new Date(text("expiresAt")).toISOString();
    const answer = await admin("/admin/deny-rules", { method: "POST", body });
    if (answer.status === 201) {
      say("deny-status", `Added: ${answer.body.kind} ${answer.body.value}.`, "good");
      form.reset();
      await load();
    } else if (answer.status !== 401) {
      say("deny-status", `Not added: ${answer.message}`, "bad");
    }
  });

  return {
    /** The rules as the API answered them (the unlock's own read of them), or read anew. */
    render,
    load,
    /** The console locked: no rule stays on the page. */
    forget() {
      $("deny-rows").replaceChildren();
      say("deny-status", "");
    },
  };
}
