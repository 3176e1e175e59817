// @ts-check
// The console's order events: the shop's endpoints (GET, POST, PATCH /admin/webhooks), a new
// or rotated secret shown once, and one endpoint's deliveries a page at a time, each with its
// attempts and last answer, replayed on request. Kept apart from the sale's figures in
// admin.js, which hands in its authenticated caller.
import { $, badge, cellOf, row, rowButton, say } from "./lib/console-page.js";
import { formatMoment } from "./lib/format.js";
import { ORDER_EVENT_TYPES } from "./lib/order-event-types.js";

/** @typedef {import("./lib/api.js").Answer} Answer */
/** @typedef {(path: string, options?: { method?: string, body?: unknown }) => Promise<Answer>} AdminCall */

/**
 * One checkbox per event type in `box` (ids prefixed, so two lists can share the page).
 * @param {string} boxId @param {string} prefix
 */
function eventChoices(boxId, prefix) {
  $(boxId).replaceChildren(
    ...ORDER_EVENT_TYPES.map((type) => {
      const label = document.createElement("label");
      label.className = "choice";
      const input = document.createElement("input");
      input.type = "checkbox";
      input.name = "events";
      input.value = type;
      input.id = `${prefix}-${type.replace(".", "-")}`;
      label.htmlFor = input.id;
      const name = document.createElement("code");
      name.textContent = type;
      label.append(input, name);
      return label;
    }),
  );
}

/** @param {string} boxId */
const checkedEvents = (boxId) =>
  [...$(boxId).querySelectorAll("input:checked")].map((input) => /** @type {HTMLInputElement} */ (input).value);

/** @param {string} boxId @param {string[]} events */
function checkEvents(boxId, events) {
  for (const input of $(boxId).querySelectorAll("input")) {
    const box = /** @type {HTMLInputElement} */ (input);
    box.checked = events.includes(box.value);
  }
}

/** @param {string[]} events */
const eventsInWords = (events) => (events.length === ORDER_EVENT_TYPES.length ? "every event" : events.join(", "));

/** What the endpoint's last answer was, in words. @param {any} delivery */
function lastAnswer(delivery) {
  if (delivery.lastStatus !== null) return `${delivery.lastStatus}`;
  if (delivery.lastError) return `no answer: ${delivery.lastError}`;
  return "–";
}

/**
 * How many attempts were made (those before a replay included) and, opened, each one: when
 * and what the endpoint answered.
 * @param {any} delivery @param {string} which the delivery in words, for a screen reader
 */
export function attemptsCell(delivery, which) {
  /** @type {{ at: string, answer: number | null, error: string | null }[]} */
  const log = delivery.attemptLog;
  const td = document.createElement("td");
  td.className = "n";
  if (log.length === 0) {
    td.textContent = "0";
    return td;
  }
  const details = document.createElement("details");
  const summary = document.createElement("summary");
  const words = document.createElement("span");
  words.className = "visually-hidden";
  words.textContent = ` attempts at ${which}`;
  summary.append(String(log.length), words);
  const list = document.createElement("ol");
  list.className = "attempts";
  list.replaceChildren(
    ...log.map((attempt) => {
      const item = document.createElement("li");
      const answer = attempt.answer === null ? `no answer (${attempt.error ?? "unknown"})` : `answered ${attempt.answer}`;
      item.textContent = `${formatMoment(attempt.at)}: ${answer}`;
      return item;
    }),
  );
  details.append(summary, list);
  td.append(details);
  return td;
}

/**
 * The order events section of the console.
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 */
export function orderEventsPanel(admin) {
  /** The endpoint open below the list, and its deliveries' next page. @type {{ endpoint: any, cursor: string | null } | undefined} */
  let open;

  eventChoices("endpoint-events", "new-event");
  eventChoices("endpoint-edit-events", "edit-event");
  checkEvents("endpoint-events", ORDER_EVENT_TYPES);

  /** Shows a secret the API answers only now (create, rotate), until hidden or the console locks. @param {any} endpoint */
  function showSecret(endpoint) {
    $("secret-url").textContent = endpoint.url;
    /** @type {HTMLInputElement} */ ($("secret-value")).value = endpoint.secret;
    $("endpoint-secret").hidden = false;
    $("secret-title").focus();
  }

  function hideSecret() {
    /** @type {HTMLInputElement} */ ($("secret-value")).value = "";
    $("endpoint-secret").hidden = true;
  }

  /** @param {any} endpoint */
  function endpointRow(endpoint) {
    const url = document.createElement("span");
    url.textContent = endpoint.url;
    const cells = [url];
    if (endpoint.description) {
      const note = document.createElement("span");
      note.className = "muted";
      note.textContent = ` (${endpoint.description})`;
      cells.push(note);
    }
    const tr = document.createElement("tr");
    tr.append(
      cellOf(...cells),
      cellOf(eventsInWords(endpoint.events)),
      cellOf(badge(endpoint.enabled ? "enabled" : "disabled")),
      cellOf(rowButton("Open", `the endpoint ${endpoint.url}`, () => void openEndpoint(endpoint, true))),
    );
    return tr;
  }

  async function load() {
    const answer = await admin("/admin/webhooks");
    if (answer.status !== 200) {
      if (answer.status !== 401) say("endpoints-status", `The endpoints cannot be read right now (${answer.message}).`, "bad");
      return;
    }
    const endpoints = answer.body.endpoints;
    $("endpoint-rows").replaceChildren(...endpoints.map(endpointRow));
    if (endpoints.length === 0) $("endpoint-rows").append(row([["No endpoints: the shop hears of no order.", ""]], 4));
    const current = open && endpoints.find((/** @type {any} */ e) => e.id === open?.endpoint.id);
    if (current && open) {
      open.endpoint = current;
      renderEndpoint();
    }
  }

  /** The open endpoint's state, events and the button that flips it. */
  function renderEndpoint() {
    if (!open) return;
    const { endpoint } = open;
    $("endpoint-url").textContent = endpoint.url;
    $("endpoint-state").replaceChildren(
      badge(endpoint.enabled ? "enabled" : "disabled"),
      endpoint.enabled
        ? " Events are sent to it as they happen."
        : ` It is sent no new events; deliveries still pending wait until it is enabled again${endpoint.disabledReason ? ` (disabled because ${endpoint.disabledReason})` : ""}.`,
    );
    $("endpoint-toggle").textContent = endpoint.enabled ? "Disable" : "Enable";
    /** @type {HTMLInputElement} */ ($("endpoint-edit-url")).value = endpoint.url;
    checkEvents("endpoint-edit-events", endpoint.events);
  }

  /** @param {any} endpoint @param {boolean} focus */
  async function openEndpoint(endpoint, focus) {
    open = { endpoint, cursor: null };
    $("endpoint").hidden = false;
    say("endpoint-status", "");
    renderEndpoint();
    $("delivery-rows").replaceChildren();
    if (focus) $("endpoint-title").focus();
    await loadDeliveries(true);
  }

  /** @param {boolean} fresh the first page again, or the next one after those shown */
  async function loadDeliveries(fresh) {
    if (!open) return;
    const opened = open;
    if (fresh) opened.cursor = null;
    const query = opened.cursor ? `?cursor=${encodeURIComponent(opened.cursor)}` : "";
    const answer = await admin(`/admin/webhooks/${opened.endpoint.id}/deliveries${query}`);
    if (open !== opened) return;
    if (answer.status !== 200) {
      if (answer.status !== 401) say("deliveries-status", `The deliveries cannot be read right now (${answer.message}).`, "bad");
      return;
    }
    const rows = answer.body.deliveries.map(deliveryRow);
    if (fresh) $("delivery-rows").replaceChildren(...rows);
    else $("delivery-rows").append(...rows);
    opened.cursor = answer.body.nextCursor;
    $("more-deliveries").hidden = !opened.cursor;
    sayDeliveries();
  }

  /** How many deliveries are shown, and how many of them failed or still wait. */
  function sayDeliveries() {
    const statuses = [...$("delivery-rows").querySelectorAll(".badge")].map((b) => /** @type {HTMLElement} */ (b).dataset.state);
    if (statuses.length === 0) return say("deliveries-status", "Nothing delivered to this endpoint yet.");
    const failed = statuses.filter((s) => s === "failed").length;
    const pending = statuses.filter((s) => s === "pending").length;
    say(
      "deliveries-status",
      `${statuses.length} ${statuses.length === 1 ? "delivery" : "deliveries"} shown: ${failed} failed, ${pending} waiting to be sent.`,
      failed > 0 ? "bad" : "",
    );
  }

  /** @param {any} delivery */
  function deliveryRow(delivery) {
    const tr = document.createElement("tr");
    tr.dataset.delivery = delivery.id;
    const subject = delivery.subject.startsWith("sale:") ? `sale ${delivery.subject.slice(5)}` : `order ${delivery.subject}`;
    const when = delivery.nextAttemptAt ? `next try ${formatMoment(delivery.nextAttemptAt)}` : formatMoment(delivery.updatedAt);
    tr.append(
      cellOf(delivery.type),
      cellOf(subject),
      cellOf(badge(delivery.status)),
      attemptsCell(delivery, `${delivery.type} of ${subject}`),
      cellOf(lastAnswer(delivery)),
      cellOf(when),
      cellOf(rowButton("Replay", `${delivery.type} of ${subject}`, () => void replay(delivery, subject))),
    );
    return tr;
  }

  /** @param {any} delivery @param {string} subject */
  async function replay(delivery, subject) {
    if (!open) return;
    const answer = await admin(`/admin/webhooks/${open.endpoint.id}/deliveries/${delivery.id}/replay`, { method: "POST" });
    if (answer.status === 202) {
      $("delivery-rows").querySelector(`[data-delivery="${delivery.id}"]`)?.replaceWith(deliveryRow(answer.body));
      sayDeliveries();
      const when = open.endpoint.enabled ? "Sent again" : "To be sent again once the endpoint is enabled";
      say("endpoint-status", `${when}: ${delivery.type} of ${subject}, with the same webhook-id.`, "good");
    } else if (answer.status !== 401) {
      say("endpoint-status", `Not replayed: ${answer.message}`, "bad");
    }
  }

  /** PATCH the open endpoint; says what changed. @param {Record<string, unknown>} changes @param {string} done */
  async function change(changes, done) {
    if (!open) return;
    const answer = await admin(`/admin/webhooks/${open.endpoint.id}`, { method: "PATCH", body: changes });
    if (answer.status === 200) {
      open.endpoint = answer.body;
      // The list first: its reload renders the open endpoint again, and an edit begun once
      // "Saved" shows must not be undone by it.
      await load();
      renderEndpoint();
      say("endpoint-status", done, "good");
    } else if (answer.status !== 401) {
      say("endpoint-status", `Not changed: ${answer.message}`, "bad");
    }
  }

  $("endpoint-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = /** @type {HTMLFormElement} */ (event.target);
    const data = new FormData(form);
    const events = checkedEvents("endpoint-events");
    if (events.length === 0) return say("endpoints-status", "Choose at least one event.", "bad");
    /** @type {Record<string, unknown>} */
    const body = { url: String(data.get("url") ?? "").trim(), events };
    const description = String(data.get("description") ?? "").trim();
    if (description) body.description = description;
    const answer = await admin("/admin/webhooks", { method: "POST", body });
    if (answer.status === 201) {
      form.reset();
      checkEvents("endpoint-events", ORDER_EVENT_TYPES);
      showSecret(answer.body);
      say("endpoints-status", `Added: ${answer.body.url}.`, "good");
      await load();
    } else if (answer.status !== 401) {
      say("endpoints-status", `Not added: ${answer.message}`, "bad");
    }
  });

  // Only what differs from the endpoint as loaded is sent.
  $("endpoint-edit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!open) return;
    const url = /** @type {HTMLInputElement} */ ($("endpoint-edit-url")).value.trim();
    const events = checkedEvents("endpoint-edit-events");
    if (events.length === 0) return say("endpoint-status", "Choose at least one event.", "bad");
    /** @type {Record<string, unknown>} */
    const changes = {};
    /** @type {string[]} */
    const done = [];
    if (url !== open.endpoint.url) {
      changes.url = url;
      done.push(`it is sent to ${url}`);
    }
    if (events.join() !== ORDER_EVENT_TYPES.filter((type) => open?.endpoint.events.includes(type)).join()) {
      changes.events = events;
      done.push(`it receives ${eventsInWords(events)}`);
    }
    if (done.length === 0) return say("endpoint-status", "Nothing to save: nothing changed.");
    void change(changes, `Saved: ${done.join("; ")}.`);
  });

  $("endpoint-toggle").addEventListener("click", () => {
    if (!open) return;
    const enabled = !open.endpoint.enabled;
    void change(
      { enabled },
      enabled
        ? "Enabled: new events are sent to it, and the deliveries that waited as they fall due."
        : "Disabled: it is sent no new events; deliveries still pending wait until it is enabled again.",
    );
  });

  $("endpoint-rotate").addEventListener("click", async () => {
    if (!open) return;
    const { endpoint } = open;
    if (
      !confirm(
        `Rotate the secret of ${endpoint.url}? Deliveries are signed with the new one at once, and with the old one too for a day: the shop has that long to take the new one.`,
      )
    )
      return;
    const answer = await admin(`/admin/webhooks/${endpoint.id}/rotate-secret`, { method: "POST" });
    if (answer.status === 200) {
      showSecret(answer.body);
      const until = new Date(answer.body.previousSecretExpiresAt).toLocaleString();
      say("endpoint-status", `Rotated: deliveries carry both signatures until ${until}, then the new one's only.`, "good");
    } else if (answer.status !== 401) {
      say("endpoint-status", `Not rotated: ${answer.message}`, "bad");
    }
  });

  $("secret-hide").addEventListener("click", () => {
    hideSecret();
    $("endpoints-title").focus();
  });
  $("more-deliveries").addEventListener("click", () => void loadDeliveries(false));
  $("refresh-deliveries").addEventListener("click", () => void loadDeliveries(true));

  return {
    load,
    /** The console locked: nothing of the endpoints stays on the page, least of all a secret. */
    forget() {
      hideSecret();
      open = undefined;
      $("endpoint").hidden = true;
      $("endpoint-rows").replaceChildren();
      $("delivery-rows").replaceChildren();
    },
  };
}
