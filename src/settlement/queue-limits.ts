/**
 * Orders per queue message, and so buyers per merged checkout call (lua/checkout.lua takes
 * at most this many): 100 orders of about 120 bytes of JSON stay far below a message's 128 KB.
 */
export const QUEUE_MESSAGE_MAX_ORDERS = 100;
