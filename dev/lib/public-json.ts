// A public route's JSON, as the verifiers read it: no token, and a failure that names the route.

/** GETs `url` and reads its JSON, naming what failed. */
export async function getJson<T>(fetcher: typeof fetch, url: string): Promise<T> {
  const res = await fetcher(url);
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}
