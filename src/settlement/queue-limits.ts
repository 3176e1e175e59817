/**
 * Orders per queue message: 100 orders of about 120 bytes of JSON each stay far below a
 * message's 128 KB, and match the most buyers one merged checkout call carries.
 */
export const QUEUE_MESSAGE_MAX_ORDERS = 100;
