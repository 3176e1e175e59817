// @ts-check
// A sale's variants as the API shows them: a sale created without any has one, "default".

/** Whether the admin made the sale in variants (sizes, colours, tiers): the buyer picks one. @param {any} sale */
export const hasVariants = (sale) =>
  Array.isArray(sale?.variants) &&
  (sale.variants.length > 1 || (sale.variants.length === 1 && sale.variants[0].id !== "default"));
