// @ts-check
// The console's Lanes and codes section (/admin/#lanes), for the watched sale (docs/lanes.md):
// per lane when it opens, its allotment, its codes issued, bound and spent and the units it
// sold (GET /admin/sales/:id/codes, read every 5 s); a batch of codes made for a lane (POST
// /admin/sales/:id/lanes/:lane/codes, asked as CSV: that answer is both what the section
// shows, this once, and the file Download CSV saves); the batches with their counts, each
// revoked with a confirmation (DELETE /admin/sales/:id/codes/:batchId); and for a sale with a
// waiting room, staff passes minted for a named account (POST /admin/sales/:id/bypass), shown
// once, with their log (GET /admin/sales/:id/bypass). Nothing is read for what the sale has not.
import { $, badge, cellOf, row, rowButton, saveFile, say } from "./lib/console-page.js";
import { formatClock, formatMoment } from "./lib/format.js";

const POLL_MS = 5000;

/** @typedef {import("./order-events.js").AdminCall} AdminCall */
/**
 * @typedef {(path: string, options?: { method?: string, body?: unknown, accept?: string }) =>
 *   Promise<{ status: number, file?: Blob, filename: string, message: string }>} AdminFile
 */

/** @param {string} id */
const field = (id) => /** @type {HTMLInputElement} */ ($(id));

/** The codes of a batch's CSV (code,lane,uses,expires_at: codes are letters, digits and -, never quoted). @param {string} csv */
const codesOf = (csv) =>
  csv
    .split(/\r?\n/)
    .slice(1)
    .map((line) => line.split(",")[0] ?? "")
    .filter(Boolean);

/** Copies `text`; where the browser refuses the clipboard, selects `source` for the owner to copy. @param {string} text @param {HTMLInputElement | HTMLTextAreaElement} source */
async function copy(text, source) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    source.focus();
    source.select();
    return false;
  }
}

/**
 * The Lanes and codes section.
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 * @param {AdminFile} adminFile the same for an answer that is a file
 */
export function lanesPanel(admin, adminFile) {
  /**
   * The sale shown: its lanes and waiting room as last read; made: the batch whose codes show.
   * @typedef {{ saleId: string, sale: any, stopped: boolean, made?: { file: Blob, filename: string } }} Shown
   */
  /** @type {Shown | undefined} */
  let shown;

  const hasLanes = (/** @type {any} */ sale) => sale.lanes?.length > 0;
  const hasLine = (/** @type {any} */ sale) => sale.queue?.mode !== "off" && !sale.draw;

  /** The codes' counts, every few seconds while the sale is shown. @param {Shown} view */
  async function poll(view) {
    while (!view.stopped) {
      const wait = await readCodes(view);
      await new Promise((resolve) => setTimeout(resolve, Math.max(POLL_MS, wait)));
    }
  }

  /** @param {Shown} view @returns {Promise<number>} how long the server asks to wait, if it does */
  async function readCodes(view) {
    const answer = await admin(`/admin/sales/${view.saleId}/codes`);
    if (view.stopped) return 0;
    if (answer.status === 200) {
      renderLanes(view.sale, answer.body);
      say("lanes-status", `Updated ${new Date().toLocaleTimeString()}, every 5 s.`);
    } else if (answer.status !== 401) {
      say("lanes-status", `The codes cannot be read right now (${answer.message}); retrying.`, "wait");
    }
    return answer.retryAfterMs;
  }

  /** @param {any} sale @param {any} codes */
  function renderLanes(sale, codes) {
    $("lane-rows").replaceChildren(
      ...sale.lanes.map((/** @type {any} */ lane) => {
        const counts = codes.lanes.find((/** @type {any} */ l) => l.name === lane.name) ?? {};
        return row([
          [lane.name, ""],
          [formatClock(lane.startsAt), ""],
          [lane.stock === null ? "no cap of its own" : String(lane.stock), "n"],
          [String(counts.issued ?? 0), "n"],
          [String(counts.bound ?? 0), "n"],
          [String(counts.spent ?? 0), "n"],
          [String(counts.sold ?? 0), "n"],
        ]);
      }),
    );
    $("batch-rows").replaceChildren(
      ...(codes.batches.length === 0
        ? [row([["No codes yet: make a batch above.", ""]], 9)]
        : codes.batches.map((/** @type {any} */ batch) => batchRow(batch))),
    );
  }

  /** @param {any} batch */
  function batchRow(batch) {
    const tr = row([
      [batch.batchId, "num"],
      [batch.lane, ""],
      [String(batch.count), "n"],
      [String(batch.uses), "n"],
      [String(batch.bound), "n"],
      [String(batch.spent), "n"],
      [batch.expiresAt ? formatClock(batch.expiresAt) : "public start", ""],
      [formatClock(batch.createdAt), ""],
    ]);
    const revokeButton = rowButton("Revoke", `batch ${batch.batchId}`, () => void revoke(batch.batchId, batch.count));
    tr.append(cellOf(badge(batch.revoked ? "revoked" : "active"), ...(batch.revoked ? [] : [" ", revokeButton])));
    return tr;
  }

  /** @param {string} batchId @param {number} count */
  async function revoke(batchId, count) {
    const view = shown;
    if (!view) return;
    const codes = count === 1 ? "Its code is" : `Its ${count} codes are`;
    if (!confirm(`Revoke batch ${batchId}? ${codes} refused from now on; orders already bought with them stand.`)) return;
    say("batch-status", `Revoking ${batchId}…`, "wait");
    const answer = await admin(`/admin/sales/${view.saleId}/codes/${batchId}`, { method: "DELETE" });
    if (shown !== view) return;
    if (answer.status === 204) {
      say("batch-status", `Revoked batch ${batchId}: its codes are refused from now on.`, "good");
      await readCodes(view);
    } else if (answer.status !== 401) {
      say("batch-status", `Not revoked: ${answer.message}. Revoking again is safe.`, "bad");
    }
  }

  $("batch-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const view = shown;
    if (!view) return;
    const lane = /** @type {HTMLSelectElement} */ ($("batch-lane")).value;
    const count = Number(field("batch-count").value);
    const uses = Number(field("batch-uses").value);
    const expires = Date.parse(field("batch-expires").value);
    const body = { count, uses, ...(Number.isFinite(expires) && { expiresAt: new Date(expires).toISOString() }) };
    say("batch-status", "Making the codes…", "wait");
    const answer = await adminFile(`/admin/sales/${view.saleId}/lanes/${encodeURIComponent(lane)}/codes`, {
      method: "POST",
      body,
      accept: "text/csv",
    });
    if (shown !== view) return;
    if (!answer.file) {
      if (answer.status !== 401) say("batch-status", `No codes made: ${answer.message}`, "bad");
      return;
    }
    const codes = codesOf(await answer.file.text());
    const batchId = /cb_[0-9a-f]+/.exec(answer.filename)?.[0] ?? "";
    view.made = { file: answer.file, filename: answer.filename };
    $("batch-codes").hidden = false;
    const each = uses === 1 ? "one purchase each" : `${uses} purchases each`;
    $("batch-codes-title").textContent = `${codes.length} codes for ${lane}, ${each} (batch ${batchId})`;
    /** @type {HTMLTextAreaElement} */ ($("batch-codes-list")).value = codes.join("\n");
    say("batch-status", `Made ${codes.length} codes for ${lane}: they are below, shown this once.`, "good");
    $("batch-codes-title").focus();
    void readCodes(view);
  });

  $("batch-copy").addEventListener("click", async () => {
    const list = /** @type {HTMLTextAreaElement} */ ($("batch-codes-list"));
    const copied = await copy(list.value, list);
    say(
      "batch-status",
      copied ? "Copied the codes." : "The browser did not let the console copy: the codes are selected, copy them yourself.",
      copied ? "good" : "bad",
    );
  });

  $("batch-download").addEventListener("click", () => {
    if (!shown?.made) return;
    saveFile(shown.made.file, shown.made.filename);
    say("batch-status", `Downloaded ${shown.made.filename}.`, "good");
  });

  $("batch-hide").addEventListener("click", () => {
    hideCodes();
    say("batch-status", "The codes are hidden: the console cannot show them again.");
    $("batch-title").focus();
  });

  function hideCodes() {
    if (shown) shown.made = undefined;
    $("batch-codes").hidden = true;
    /** @type {HTMLTextAreaElement} */ ($("batch-codes-list")).value = "";
  }

  /** The staff passes minted for the sale. @param {Shown} view */
  async function readPasses(view) {
    const answer = await admin(`/admin/sales/${view.saleId}/bypass`);
    if (shown !== view || answer.status !== 200) return;
    $("pass-rows").replaceChildren(
      ...(answer.body.passes.length === 0
        ? [row([["No staff passes minted.", ""]], 4)]
        : answer.body.passes.map((/** @type {any} */ p) =>
            row([
              [p.userId, ""],
              [formatMoment(p.expiresAt), ""],
              [formatMoment(p.mintedAt), ""],
              [p.mintedFrom, "num"],
            ]),
          )),
    );
  }

  $("pass-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const view = shown;
    if (!view) return;
    const userId = field("pass-user").value.trim();
    say("pass-status", `Minting a staff pass for ${userId}…`, "wait");
    const answer = await admin(`/admin/sales/${view.saleId}/bypass`, { method: "POST", body: { userId } });
    if (shown !== view) return;
    if (answer.status === 201) {
      $("pass-shown").hidden = false;
      $("pass-shown-user").textContent = answer.body.userId;
      $("pass-shown-until").textContent = formatMoment(answer.body.expiresAt);
      field("pass-value").value = answer.body.pass;
      field("pass-user").value = "";
      say("pass-status", `Minted a staff pass for ${answer.body.userId}: it is below, shown this once.`, "good");
      $("pass-shown-title").focus();
      void readPasses(view);
    } else if (answer.status !== 401) {
      say("pass-status", `No pass minted: ${answer.message}`, "bad");
    }
  });

  $("pass-copy").addEventListener("click", async () => {
    const copied = await copy(field("pass-value").value, field("pass-value"));
    say(
      "pass-status",
      copied ? "Copied the pass." : "The browser did not let the console copy: the pass is selected, copy it yourself.",
      copied ? "good" : "bad",
    );
  });

  $("pass-hide").addEventListener("click", hidePass);

  function hidePass() {
    $("pass-shown").hidden = true;
    field("pass-value").value = "";
  }

  return {
    /**
     * The watched sale as last read: its lanes and staff passes are followed from its first read.
     * @param {any} sale
     */
    sawSale(sale) {
      if (shown && shown.saleId === sale.id) {
        shown.sale = sale;
        return;
      }
      this.forget();
      const view = { saleId: sale.id, sale, stopped: false };
      shown = view;
      $("live-lanes").hidden = !hasLanes(sale);
      $("lanes-none").hidden = true;
      $("watched-lanes").hidden = false;
      $("lanes-sale-id").textContent = sale.id;
      $("lanes-absent").hidden = hasLanes(sale);
      $("lanes-box").hidden = !hasLanes(sale);
      $("lanes-draw-hint").hidden = !sale.draw;
      $("pass-absent").hidden = hasLine(sale);
      $("pass-box").hidden = !hasLine(sale);
      if (hasLanes(sale)) {
        $("batch-lane").replaceChildren(...sale.lanes.map((/** @type {any} */ l) => new Option(l.name)));
        void poll(view);
      }
      if (hasLine(sale)) void readPasses(view);
    },
    /** No sale in the section (another one watched, or the console locked). */
    forget() {
      if (shown) shown.stopped = true;
      hideCodes();
      hidePass();
      shown = undefined;
      $("live-lanes").hidden = true;
      $("lanes-none").hidden = false;
      $("watched-lanes").hidden = true;
      for (const id of ["lane-rows", "batch-rows", "pass-rows", "batch-lane"]) $(id).replaceChildren();
      for (const id of ["lanes-status", "batch-status", "pass-status"]) say(id, "");
    },
  };
}
