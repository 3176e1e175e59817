// The generated documentation files and where they live.
import path from "node:path";
import { ROOT } from "../lib/project.ts";
import { openApiDocument } from "./openapi.ts";
import { referencePage } from "./reference-page.ts";

export function apiDocFiles(): { file: string; content: string }[] {
  const document = openApiDocument();
  return [
    { file: path.join(ROOT, "public", "openapi.json"), content: `${JSON.stringify(document, null, 2)}\n` },
    { file: path.join(ROOT, "public", "docs.html"), content: referencePage(document) },
  ];
}
