// tsclient drives a petstore through a client generated from GET
// /v1/openapi.json with openapi-typescript and openapi-fetch, configured as
// the document says: the API's operations on the server's base address
// (ending /v1), the ones whose path item names its own servers (/livez,
// /readyz, /healthz, /metrics, /docs) on the origin. Every operation of the
// document is called and answers as documented; the answers are read
// through the generated types. .ci/ts-client.sh builds it in a throwaway
// directory beside the generated schema.ts.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

// A compile-time check that a later version cannot break this client: a
// code the document does not list yet is still an Error code (a closed enum
// would make this a type error).
const laterCode: components["schemas"]["Error"]["code"] = "a_code_of_a_later_version";
void laterCode;

const [origin, key] = process.argv.slice(2);
if (!origin || !key) {
  throw new Error("usage: node main.js ORIGIN KEY");
}
const bearer = { Authorization: `Bearer ${key}` };
const api = createClient<paths>({ baseUrl: origin + "/v1", headers: bearer });
const keyless = createClient<paths>({ baseUrl: origin + "/v1" });
const outside = createClient<paths>({ baseUrl: origin, headers: bearer });

function expect(ok: boolean, what: string, got: { response: Response; error?: unknown; data?: unknown }) {
  if (!ok) {
    throw new Error(`${what}: status ${got.response.status} ${JSON.stringify(got.error ?? got.data ?? null)}`);
  }
}

async function main() {
  const created = await api.POST("/categories", { body: { name: "dog", description: "Loyal companions" } });
  expect(created.response.status === 201 && created.data?.name === "dog", "create", created);
  const id = created.data!.id;

  // Location as clients resolve it: a reference relative to the request's URL.
  const location = new URL(created.response.headers.get("Location") ?? "", created.response.url);
  const viaLocation = await fetch(location, { headers: bearer });
  const fetched = (await viaLocation.json()) as components["schemas"]["Category"];
  if (viaLocation.status !== 200 || fetched.id !== id) {
    throw new Error(`GET ${location}: status ${viaLocation.status}, ${JSON.stringify(fetched)}`);
  }

  const list = await api.GET("/categories");
  expect(list.response.status === 200 && list.data?.length === 1 && list.data[0].id === id, "list", list);
  const page = await api.GET("/categories", { params: { query: { limit: 1 } } });
  expect(page.response.status === 200 && page.data?.length === 1, "a page", page);
  const got = await api.GET("/categories/{id}", { params: { path: { id } } });
  expect(got.response.status === 200 && got.data?.description === "Loyal companions", "get", got);
  const head = await api.HEAD("/categories");
  expect(head.response.status === 200, "HEAD of the list", head);

  const blank = await api.POST("/categories", { body: { name: "  " } });
  expect(blank.response.status === 400 && blank.error?.status === 400, "create with a blank name", blank);
  const taken = await api.POST("/categories", { body: { name: "DOG" } });
  expect(taken.response.status === 409 && taken.error?.code === "conflict", "create a taken name", taken);
  const missing = await api.GET("/categories/{id}", { params: { path: { id: id + 1000 } } });
  expect(missing.response.status === 404 && missing.error?.code === "not_found", "get a missing id", missing);
  const denied = await keyless.GET("/categories");
  expect(denied.response.status === 401 && denied.error?.code === "unauthorized", "list without a key", denied);

  const pets = await api.GET("/pets/{petId}", { params: { path: { petId: "1" } } });
  expect([501, 410].includes(pets.response.status) && pets.error?.status === pets.response.status, "a pet", pets);
  const orders = await api.GET("/store/orders");
  expect(orders.response.status === 501 && orders.error?.code === "not_implemented", "the orders", orders);
  const doc31 = await keyless.GET("/openapi.json");
  expect(doc31.response.status === 200, "the 3.1 document", doc31);
  const doc30 = await keyless.GET("/openapi-3.0.json");
  expect(doc30.response.status === 200, "the 3.0 document", doc30);

  const live = await outside.GET("/livez");
  expect(live.response.status === 200 && live.data?.status === "ok", "/livez", live);
  const ready = await outside.GET("/readyz");
  expect(ready.response.status === 200 && ready.data?.status === "ready", "/readyz", ready);
  const health = await outside.GET("/healthz");
  expect(health.response.status === 200 && health.data?.status === "ok", "/healthz", health);
  const metrics = await outside.GET("/metrics", { parseAs: "text" });
  expect(metrics.response.status === 200 && (metrics.data ?? "").includes("petstore_"), "/metrics", metrics);
  const docs = await outside.GET("/docs", { parseAs: "text" });
  expect(docs.response.status === 200 && (docs.data ?? "").includes("<html"), "/docs", docs);
  console.log("tsclient: every operation of the document reached; list, create, get, 400, 401, 404, 409 and /livez as documented");
}

main().catch((err) => {
  console.error("tsclient:", err instanceof Error ? err.message : err);
  process.exit(1);
});
