// Sends petstore requests it refuses before reading their bodies, each body
// whole before the answer is read, and counts how often the Error body
// arrives (internal/clients/refused_test.go). Reads on stdin
// {"cases": [...], "repeats": N, "client": "http" | "http close" | "fetch"};
// writes {case name: {"ok": n, "errors": {what: n}}}.
import http from "node:http";

const body = (size) => Buffer.concat([Buffer.from('{"name":"'), Buffer.alloc(size - 11, "x"), Buffer.from('"}')]);

function headers(c, close) {
  const h = { "Content-Type": c.content_type };
  if (c.auth) h["Authorization"] = c.auth;
  if (close) h["Connection"] = "close";
  return h;
}

function isError(c, status, text) {
  try {
    const e = JSON.parse(text);
    return status === c.status && e.code === c.code && e.status === c.status;
  } catch {
    return false;
  }
}

// One request with node:http; resolves [status, text] or [error name, ""].
function viaHTTP(c, data, agent, close) {
  return new Promise((resolve) => {
    const req = http.request(c.url, { method: "POST", headers: { ...headers(c, close), "Content-Length": data.length }, agent, timeout: 20000 }, (res) => {
      const chunks = [];
      res.on("data", (d) => chunks.push(d));
      res.on("end", () => resolve([res.statusCode, Buffer.concat(chunks).toString()]));
      res.on("error", (e) => resolve([e.code || e.name, ""]));
    });
    req.on("error", (e) => resolve([e.code || e.name, ""]));
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.end(data);
  });
}

async function viaFetch(c, data) {
  try {
    const res = await fetch(c.url, { method: "POST", headers: headers(c, false), body: data, signal: AbortSignal.timeout(20000) });
    return [res.status, await res.text()];
  } catch (e) {
    return [(e.cause && e.cause.code) || e.name, ""];
  }
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const args = JSON.parse(Buffer.concat(chunks).toString());
const close = args.client === "http close";
const agent = new http.Agent({ keepAlive: !close, maxSockets: 1 });
const results = {};
for (const c of args.cases) {
  const tally = { ok: 0, errors: {} };
  const data = body(c.size);
  for (let i = 0; i < args.repeats; i++) {
    const [status, text] = args.client === "fetch" ? await viaFetch(c, data) : await viaHTTP(c, data, agent, close);
    if (isError(c, status, text)) tally.ok++;
    else tally.errors[String(status)] = (tally.errors[String(status)] || 0) + 1;
  }
  results[c.name] = tally;
}
agent.destroy();
process.stdout.write(JSON.stringify(results));
