// The bounded Map handed to the global limits' sliding window as its ephemeral cache (src/isolate/bounded-map.ts).
import { expect, it } from "vitest";
import { BoundedMap } from "../../src/isolate/bounded-map.ts";

it("holds at most its number of entries, forgetting the one first written; rewriting a key evicts nothing", () => {
  const map = new BoundedMap<string, number>(3);
  expect(map).toBeInstanceOf(Map); // what the library checks before using it
  for (const [i, key] of ["a", "b", "c"].entries()) map.set(key, i);
  map.set("a", 10);
  expect([...map.entries()]).toEqual([
    ["a", 10],
    ["b", 1],
    ["c", 2],
  ]);
  map.set("d", 3);
  expect([...map.keys()]).toEqual(["b", "c", "d"]);
  for (let i = 0; i < 1_000; i++) map.set(`caller-${i}`, i);
  expect(map.size).toBe(3);
  expect([...map.keys()]).toEqual(["caller-997", "caller-998", "caller-999"]);
});
