/**
 * D1's own clock, in epoch ms. Every decision about a deadline (expire? still payable?) is
 * taken inside one statement against this one clock, so a payment and the expiry racing
 * each other can never both win, whatever the Workers' clocks say.
 */
export const NOW_MS = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";
