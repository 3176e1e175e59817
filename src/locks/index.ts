// The lock library: Redis locks for Workers over Upstash REST (docs/locks.md). It imports
// nothing of the application; callers hand it @upstash/redis clients.
export { type FenceDatabase, type FencedLease, fencedBatch } from "./d1-fence";
export { LockLostError, type LockLostReason, LockTimeoutError, StaleFenceError } from "./errors";
export { type Held, type HoldOptions, holdWhile } from "./hold";
export { type LockKeys, lockKeys } from "./keys";
export { Lease } from "./lease";
export { type AcquireOptions, Lock, type LockOptions } from "./lock";
export { MultiLease, MultiLock } from "./multi-lock";
export { QuorumLock, type QuorumOptions } from "./quorum-lock";
export { type ReentrantHold, ReentrantLock, type ReentrantRelease } from "./reentrant-lock";
export { ExpirableSemaphore, Permit } from "./semaphore";
export type { RetryOptions } from "./wait";
