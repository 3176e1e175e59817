// The settings table (src/shared/settings.ts) written out where people and wrangler read it:
// wrangler.toml's [vars] (the vars with their defaults, each with its line of docs) and the
// table of docs/configuration.md. Both are regions of hand-written files, replaced whole.
import { SETTING_DOCS, SETTINGS, type SettingName } from "../../src/shared/settings.ts";

const names = Object.keys(SETTINGS) as SettingName[];

/** `text` as `#` comment lines of at most `width` characters. */
function commentLines(text: string, width = 100): string[] {
  const lines: string[] = [];
  let line = "#";
  for (const word of text.split(" ")) {
    if (line.length + 1 + word.length > width && line !== "#") {
      lines.push(line);
      line = "#";
    }
    line += ` ${word}`;
  }
  return [...lines, line];
}

/** wrangler.toml's [vars] section: every var, its default, what it does and accepts. */
export function varsSection(): string {
  const secrets = names.filter((name) => SETTINGS[name].kind === "secret");
  const lines = [
    "[vars]",
    "# Generated from src/shared/settings.ts by `npm run generate`: change a setting there, not here.",
    ...commentLines(`Secrets, set with \`wrangler secret put\` (.dev.vars locally): ${secrets.join(", ")}.`),
  ];
  for (const name of names) {
    const setting = SETTINGS[name];
    if (setting.kind === "secret") continue;
    lines.push(
      ...commentLines(`${SETTING_DOCS[name]}. Accepts ${setting.accepts}.`),
      `${name} = ${JSON.stringify(setting.fallback)}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** `toml` with its [vars] section (up to the next section or comment block before one) replaced. */
export function withVarsSection(toml: string): string {
  const start = toml.indexOf("\n[vars]\n");
  if (start < 0) throw new Error("wrangler.toml has no [vars] section");
  // The section ends where the next one's comments (or header) begin.
  const next = /\n\n(#[^\n]*\n)*\[/g;
  next.lastIndex = start + 1;
  const end = next.exec(toml)?.index ?? toml.length;
  return `${toml.slice(0, start + 1)}${varsSection()}${toml.slice(end + 1)}`;
}

const cell = (text: string) => text.replaceAll("|", "\\|");

/** The settings table of docs/configuration.md. */
export function settingsTable(): string {
  const rows = names.map((name) => {
    const setting = SETTINGS[name];
    const fallback = setting.fallback === "" ? "unset" : `\`${setting.fallback}\``;
    return `| \`${name}\` | ${setting.kind} | ${fallback} | ${cell(setting.accepts)} | ${cell(SETTING_DOCS[name])} |`;
  });
  return ["| name | kind | default | accepts | what it does |", "| --- | --- | --- | --- | --- |", ...rows].join("\n");
}

const TABLE_START = "<!-- settings table: generated from src/shared/settings.ts by npm run generate -->";
const TABLE_END = "<!-- end of the settings table -->";

/** `markdown` with the region between the table's markers replaced. */
export function withSettingsTable(markdown: string): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`docs/configuration.md has no "${TABLE_START}" ... "${TABLE_END}" region`);
  return `${markdown.slice(0, start)}${TABLE_START}\n${settingsTable()}\n${markdown.slice(end)}`;
}
