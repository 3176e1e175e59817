// A crowd of buyers and the two ways to send it: a fixed number of requests in flight
// (closed loop, like JMeter threads) or a fixed arrival rate (open loop, like k6's
// constant-arrival-rate executor, where slow answers do not slow the arrivals).
import type { Answer, ApiClient } from "../../dev/lib/api-client.ts";

export interface Shot {
  userId: string;
  token: string;
}

export interface Sample extends Answer {
  userId: string;
  /** When the request was sent, ms after the crowd started. */
  startMs: number;
  latencyMs: number;
}

/** `stopAfterMs` bounds a crowd in time: no request is sent after it (those in flight finish). */
export type Pace = ({ concurrency: number } | { ratePerSec: number }) & { stopAfterMs?: number };

export interface Progress {
  sent: number;
  done: number;
  accepted: number;
}

/** `users` distinct users, each trying `attempts` times back to back, like a double click. */
export async function planCrowd(
  api: Pick<ApiClient, "userToken">,
  users: number,
  attempts: number,
  userPrefix: string,
): Promise<Shot[]> {
  const tokens = await Promise.all(
    Array.from({ length: users }, async (_, i) => {
      const userId = `${userPrefix}${i}`;
      return { userId, token: await api.userToken(userId) };
    }),
  );
  return tokens.flatMap((shot) => Array.from({ length: attempts }, () => shot));
}

export async function drive(
  shots: Shot[],
  send: (shot: Shot) => Promise<Answer>,
  pace: Pace,
  onProgress?: (progress: Progress) => void,
): Promise<{ samples: Sample[]; durationMs: number }> {
  const samples: Sample[] = [];
  const progress: Progress = { sent: 0, done: 0, accepted: 0 };
  const started = performance.now();

  const fire = async (shot: Shot) => {
    const sentAt = performance.now();
    progress.sent++;
    const answer = await send(shot);
    samples.push({ ...answer, userId: shot.userId, startMs: sentAt - started, latencyMs: performance.now() - sentAt });
    progress.done++;
    if (answer.status === 202) progress.accepted++;
  };

  const ticker = onProgress && setInterval(() => onProgress({ ...progress }), 200);
  const inTime = () => pace.stopAfterMs === undefined || performance.now() - started < pace.stopAfterMs;
  try {
    if ("concurrency" in pace) {
      let next = 0;
      const worker = async () => {
        while (next < shots.length && inTime()) await fire(shots[next++] as Shot);
      };
      await Promise.all(Array.from({ length: Math.min(pace.concurrency, shots.length) }, worker));
    } else {
      const inFlight: Promise<void>[] = [];
      for (const [i, shot] of shots.entries()) {
        const wait = started + (i * 1000) / pace.ratePerSec - performance.now();
        if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait));
        if (!inTime()) break;
        inFlight.push(fire(shot));
      }
      await Promise.all(inFlight);
    }
  } finally {
    if (ticker) clearInterval(ticker);
  }
  onProgress?.({ ...progress });
  return { samples, durationMs: performance.now() - started };
}
