// Waiting in line by push against polling, measured: the same buyers on the same kind of line
// (started, places let in a second at a time), for the same seconds, first each page polling
// as the server tells it (retryAfterSec), then each holding the lab's stream open
// (GET /lab/sales/:saleId/queue/stream: server-sent events at the same pace). Counted with the
// meter (requests, Upstash commands) and workerd's CPU from /proc, per answer the buyer got.

import { measureCpu, stackProcesses } from "../runner/cpu.ts";
import type { Shot } from "../runner/crowd.ts";
import type { Counting } from "./counting.ts";
import type { Counts } from "./counts.ts";

export interface ChannelFigures {
  /** Answers the buyers got: polls answered, or events pushed. */
  answers: number;
  /** Everything the channel cost over the run. */
  counts: Counts;
  /** workerd's CPU over the run (ms): this machine's, for the ratio between the two. */
  workerdCpuMs: number;
}

export interface PushFigures {
  buyers: number;
  seconds: number;
  polling: ChannelFigures;
  stream: ChannelFigures;
}

const BUYERS = 20;
/** How long each channel runs, by default. */
const SECONDS = 15;

/** A started line letting one place in a second, `BUYERS` buyers in it behind a first: their tickets. */
async function line(c: Counting, name: string): Promise<{ saleId: string; buyers: { shot: Shot; ticket: string }[] }> {
  const [sale] = await c.createSales({
    name,
    stock: 1_000,
    queue: { mode: "fifo", prequeueSec: 86_400, admitPerSec: 1, passTtlSec: 600 },
  });
  const saleId = (sale as { id: string }).id;
  const buyers = [];
  for (const shot of await c.users(`${name}-${saleId}`, BUYERS + 1)) {
    const joined = await c.api.joinWaitingRoom(saleId, shot.token);
    c.expect(`a join answered ${joined.status} ${joined.code}`, joined.status === 200);
    buyers.push({ shot, ticket: joined.body?.ticket as string });
  }
  return { saleId, buyers: buyers.slice(1) };
}

/** Runs `work` counted and timed on the Worker's CPU. */
async function channel(c: Counting, work: () => Promise<number>): Promise<ChannelFigures> {
  let answers = 0;
  let workerdCpuMs = 0;
  const measured = await c.measure(async () => {
    const { result, cpu } = await measureCpu(stackProcesses(c.stack), work);
    answers = result;
    workerdCpuMs = cpu.cpuMs.workerd ?? 0;
  });
  return { answers, counts: c.counted(measured), workerdCpuMs };
}

export async function measurePush(c: Counting, seconds = SECONDS): Promise<PushFigures> {
  const polled = await line(c, "cost: polled line");
  const polling = await channel(c, async () => {
    const until = Date.now() + seconds * 1000;
    let answers = 0;
    await Promise.all(
      polled.buyers.map(async ({ shot, ticket }) => {
        while (Date.now() < until) {
          const answer = await c.api.pollQueue(polled.saleId, shot.token, ticket);
          c.expect(`a poll answered ${answer.status} ${answer.code}`, answer.status === 200 && answer.body !== undefined);
          answers++;
          if (answer.body?.state !== "waiting") return;
          await new Promise((r) => setTimeout(r, Math.min(until - Date.now(), (answer.body?.retryAfterSec ?? 1) * 1000)));
        }
      }),
    );
    return answers;
  });

  const streamed = await line(c, "cost: streamed line");
  const stream = await channel(c, async () => {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), seconds * 1000);
    let answers = 0;
    try {
      await Promise.all(
        streamed.buyers.map(async ({ shot, ticket }) => {
          const res = await c.api.labQueueStream(streamed.saleId, shot.token, ticket, stop.signal);
          c.expect(`the stream answered ${res.status}`, res.status === 200 && res.body !== null);
          const decoder = new TextDecoder();
          let text = "";
          try {
            for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
              text += decoder.decode(chunk, { stream: true });
          } catch (err) {
            if (!stop.signal.aborted) throw err;
          }
          // Each event ends with a blank line.
          answers += text.split("\n\n").length - 1;
        }),
      );
    } finally {
      clearTimeout(timer);
    }
    return answers;
  });
  return { buyers: BUYERS, seconds, polling, stream };
}
