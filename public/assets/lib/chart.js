// @ts-check
// Charts drawn as SVG with DOM calls: a line chart of counts per second (one polyline per
// code) and horizontal bars (the funnel), colours from CSS classes (no inline style, so the
// page's strict CSP holds). A charting library would outweigh the whole console for two charts.

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 600;
const HEIGHT = 200;
const PAD = { left: 36, right: 8, top: 8, bottom: 18 };

/**
 * @param {string} name
 * @param {Record<string, string | number>} attributes
 */
function svg(name, attributes) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}

/** A "nice" top for the y axis: 1, 2 or 5 times a power of ten, at least `max`. */
function niceCeiling(/** @type {number} */ max) {
  if (max <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

/**
 * Draws the series into `target` (a <g> of an <svg> whose viewBox is 0 0 600 200), replacing what was there.
 * @param {SVGGElement} target
 * @param {{ from: number, to: number, codes: string[], perSecond: (code: string, at: number) => number, seriesClass: (code: string) => string }} data
 */
export function drawChart(target, data) {
  const { from, to, codes } = data;
  const span = Math.max(1, to - from);
  let max = 0;
  for (const code of codes) for (let at = from; at <= to; at++) max = Math.max(max, data.perSecond(code, at));
  const top = niceCeiling(max);
  const x = (/** @type {number} */ at) => PAD.left + ((at - from) / span) * (WIDTH - PAD.left - PAD.right);
  const y = (/** @type {number} */ v) => HEIGHT - PAD.bottom - (v / top) * (HEIGHT - PAD.top - PAD.bottom);

  const children = [];
  for (const fraction of [0, 0.5, 1]) {
    const value = top * fraction;
    children.push(svg("line", { class: "grid", x1: PAD.left, x2: WIDTH - PAD.right, y1: y(value), y2: y(value) }));
    const label = svg("text", { class: "axis-label", x: PAD.left - 4, y: y(value) + 3, "text-anchor": "end" });
    label.textContent = String(value);
    children.push(label);
  }
  for (const [at, text] of [
    [from, `-${span + 1}s`],
    [to, "now"],
  ]) {
    const label = svg("text", {
      class: "axis-label",
      x: x(Number(at)),
      y: HEIGHT - 4,
      "text-anchor": at === from ? "start" : "end",
    });
    label.textContent = String(text);
    children.push(label);
  }
  for (const code of codes) {
    const points = [];
    for (let at = from; at <= to; at++) points.push(`${x(at).toFixed(1)},${y(data.perSecond(code, at)).toFixed(1)}`);
    const line = svg("polyline", { class: data.seriesClass(code), points: points.join(" ") });
    const title = svg("title", {});
    title.textContent = code;
    line.append(title);
    children.push(line);
  }
  target.replaceChildren(...children);
}

const BAR_HEIGHT = 14;
const BAR_GAP = 4;
const GROUP_GAP = 10;
const BAR_LABELS = 150;

/**
 * Draws horizontal bars into `target` (a <g> of an <svg class="chart bars">), one group per
 * row (its label at the left), one bar per entry of the group, named beside its value unless its
 * name is empty, lengths on one scale; sets the <svg>'s viewBox to fit.
 * @param {SVGGElement} target
 * @param {{ label: string, bars: { name: string, value: number, seriesClass: string }[] }[]} groups
 */
export function drawBars(target, groups) {
  const max = niceCeiling(Math.max(0, ...groups.flatMap((g) => g.bars.map((b) => b.value))));
  const length = (/** @type {number} */ v) => (v / max) * (WIDTH - BAR_LABELS - PAD.right - 40);
  const children = [];
  let top = PAD.top;
  for (const group of groups) {
    const heading = svg("text", { class: "bar-label", x: 0, y: top + BAR_HEIGHT - 3 });
    heading.textContent = group.label;
    children.push(heading);
    for (const bar of group.bars) {
      const rect = svg("rect", { class: bar.seriesClass, x: BAR_LABELS, y: top, height: BAR_HEIGHT, width: length(bar.value) });
      const title = svg("title", {});
      title.textContent = `${group.label}: ${bar.name} ${bar.value}`;
      rect.append(title);
      const value = svg("text", { class: "axis-label", x: BAR_LABELS + length(bar.value) + 4, y: top + BAR_HEIGHT - 3 });
      value.textContent = bar.name ? `${bar.name} ${bar.value}` : String(bar.value);
      children.push(rect, value);
      top += BAR_HEIGHT + BAR_GAP;
    }
    top += GROUP_GAP;
  }
  target.replaceChildren(...children);
  target.ownerSVGElement?.setAttribute("viewBox", `0 0 ${WIDTH} ${Math.max(top, 40)}`);
}
