// zod/mini speaks no language until told: this loads English messages, once. Every module
// with schemas imports it for that effect. zod/mini rather than classic zod: the classic
// build adds about 115 KiB gzipped to the Worker, this one under 10 (imported as
// `* as z`, the bundler keeps only what is used).
import { config } from "zod/mini";
import en from "zod/v4/locales/en.js";

config(en());
