// A vitest reporter for npm run test:busy: when each test file ran and for how long, hooks and
// imports included, written as JSON to the file FILE_TIMES_OUT names once the run ends.
// vitest's JSON report times a file from its first test to its last, so a file whose crowd
// runs in beforeAll read as a fraction of a second there.
import { writeFileSync } from "node:fs";
import type { Reporter, TestModule } from "vitest/node";

export interface FileTime {
  name: string;
  /** Epoch ms. */
  startTime: number;
  endTime: number;
  status: string;
}

export default class FileTimesReporter implements Reporter {
  private readonly times: FileTime[] = [];

  onTestModuleEnd(module: TestModule): void {
    const d = module.diagnostic();
    const endTime = Date.now();
    const took = d.environmentSetupDuration + d.prepareDuration + d.setupDuration + d.collectDuration + d.duration;
    this.times.push({ name: module.moduleId, startTime: endTime - took, endTime, status: module.state() });
  }

  onTestRunEnd(): void {
    const out = process.env.FILE_TIMES_OUT;
    if (out) writeFileSync(out, JSON.stringify(this.times));
  }
}
