// The watchdog `npm start` leaves beside its stack: when `npm start` dies without stopping
// its processes (kill -9, an OOM kill), this stops them within a second, so nothing keeps
// holding the ports or serving a Worker that talks to a Redis that is gone.
//   node --import tsx dev/stack/watchdog.ts <owner pid> <record file>
import { existsSync } from "node:fs";
import { StackRecordFile, stopProcesses } from "./stack-record.ts";

const [ownerPid, file] = [Number(process.argv[2]), process.argv[3] as string];
const record = new StackRecordFile(file);

const ownerAlive = () => {
  try {
    process.kill(ownerPid, 0);
    return true;
  } catch {
    return false;
  }
};

const timer = setInterval(async () => {
  // A clean shutdown removes the record: nothing left to watch.
  if (!existsSync(file)) return process.exit(0);
  if (ownerAlive()) return;
  clearInterval(timer);
  const leftovers = record.read()?.processes.filter((p) => p.pid !== process.pid) ?? [];
  await stopProcesses(leftovers);
  record.clear();
  process.exit(0);
}, 500);
