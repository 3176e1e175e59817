// @ts-check
// What the pages keep for the tab (sessionStorage: a sign-in, a ticket, the order followed),
// gone when the tab closes. A browser that refuses the storage (a framed storefront under a
// strict privacy setting throws on touching it) gets a page that forgets on reload, as if
// nothing were kept, rather than one that fails to start.

/** @returns {Storage | undefined} */
function storage() {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

export const tabStorage = {
  /** @param {string} key @returns {string | undefined} */
  get(key) {
    try {
      return storage()?.getItem(key) ?? undefined;
    } catch {
      return undefined;
    }
  },
  /** @param {string} key @param {string} value */
  set(key, value) {
    try {
      storage()?.setItem(key, value);
    } catch {
      // not kept: the page goes on with what it holds in memory
    }
  },
  /** @param {string} key */
  remove(key) {
    try {
      storage()?.removeItem(key);
    } catch {
      // nothing was kept
    }
  },
};
