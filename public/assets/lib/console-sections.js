// @ts-check
// The console's sections, one on the screen at a time: each <section class="console-section">
// is named by its id in the URL's fragment (/admin/#create), so each is a click away in the
// nav, can be linked to, and comes back after a reload. A fragment that names no section (the
// skip link's #main) leaves the section shown as it is.

const FIRST = "watch";

const sections = () => /** @type {HTMLElement[]} */ ([...document.querySelectorAll(".console-section")]);

/** The section the URL names, else the first. */
function named() {
  const id = decodeURIComponent(location.hash.slice(1));
  return sections().some((section) => section.id === id) ? id : undefined;
}

/** @param {string} id */
function show(id) {
  for (const section of sections()) section.hidden = section.id !== id;
  for (const link of document.querySelectorAll(".console-nav a")) {
    if (link.getAttribute("href") === `#${id}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

/** The section's own heading, where reading starts once it shows. @param {string} id */
const headingOf = (id) => {
  const labelledBy = document.getElementById(id)?.getAttribute("aria-labelledby");
  return labelledBy ? document.getElementById(labelledBy) : null;
};

/** Shows the section the URL names (or the first), and every one the URL names from now on. */
export function followSections() {
  show(named() ?? FIRST);
  window.addEventListener("hashchange", () => {
    const id = named();
    if (id === undefined) return;
    show(id);
    (pendingFocus ?? headingOf(id))?.focus();
    pendingFocus = undefined;
  });
}

/** @type {HTMLElement | null | undefined} where reading starts in the next section shown, if not at its heading */
let pendingFocus;

/**
 * Goes to a section (a new entry in the history, as a click on its link), reading from
 * `focusId` in it, or from its heading.
 * @param {string} id @param {string} [focusId]
 */
export function goTo(id, focusId) {
  const target = focusId ? document.getElementById(focusId) : headingOf(id);
  if (named() === id) {
    show(id);
    target?.focus();
    return;
  }
  pendingFocus = target;
  location.hash = id;
}

/** Reading starts at the heading of the section shown (after unlocking). */
export function focusShownSection() {
  headingOf(named() ?? FIRST)?.focus();
}
