// Cloudflare's published Turnstile test keys, and tokens the local siteverify stand-in
// (siteverify.ts) reads an action from. No Node APIs: the Worker tests import it too. The
// secrets are the Worker's own list (it refuses them outside the local stack).
export { TURNSTILE_TEST_SECRETS as TEST_SECRETS } from "../../src/shared/turnstile-test-keys.ts";

/**
 * A secret of the stand-in's own that it answers as it does the always-passing test secret.
 * Not one of Cloudflare's, so a Worker configured as a deployment (LOOPBACK_HOSTS_ONLY off)
 * takes it: the tests of that configuration's host-name check use it.
 */
export const STAND_IN_SECRET = "stand-in-passes-every-token-0000000000";

/** The host name the stand-in's passing answers report (it cannot know the widget's): where `npm start` serves the storefront. */
export const STAND_IN_HOSTNAME = "localhost";

/** Cloudflare's published test site key that always passes (its widget hands the page DUMMY_TOKEN). */
export const TEST_SITE_KEY = "1x00000000000000000000AA";
export const DUMMY_TOKEN = "XXXX.DUMMY.TOKEN.XXXX";

/** A fresh token the stand-in answers with `action`, as a widget rendered with that action would give. */
export const standInToken = (action: string) => `stand-in.${crypto.randomUUID()}:${action}`;
