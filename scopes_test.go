package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/openapi/openapitest"
	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// Keys of the scope tests, one per kind of grant. Test values, safe to print.
const (
	readKey    = "scope-read-Key-Tq8Wm2"
	writeKey   = "scope-write-Key-Hn3Vb6"
	metricsKey = "scope-metrics-Key-Jd9Ws2"
	mixedKey   = "scope-mixed-Key-Lc5Rx7" // write+metrics
	allKey     = "scope-all-Key-Zp1Kd4"   // written without scopes
)

// scopedEnv serves with one key of each kind, read as PETSTORE_API_KEYS
// gives them.
func scopedEnv(t *testing.T, opts ...testOption) *testEnv {
	t.Helper()
	keys, err := apikey.ParseList("PETSTORE_API_KEYS",
		readKey+":read,"+writeKey+":write,"+metricsKey+":metrics,"+mixedKey+":write+metrics,"+allKey)
	if err != nil {
		t.Fatalf("ParseList: %v", err)
	}
	return newTestEnv(t, append([]testOption{withAcceptedKeys(keys), withNow(beforePetsSunset)}, opts...)...)
}

// bearer is the header set of a JSON request with key.
func bearer(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
}

// mustInsufficientScope checks a 403 insufficient_scope answer: the RFC 6750
// challenge naming scope, and the Error body unless the request was a HEAD.
func mustInsufficientScope(t *testing.T, method string, rec *httptest.ResponseRecorder, scope string) {
	t.Helper()
	resp := rec.Result()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status: got %d, want 403", resp.StatusCode)
	}
	want := `Bearer realm="petstore", error="insufficient_scope", scope="` + scope + `"`
	if got := resp.Header.Values("Www-Authenticate"); len(got) != 1 || got[0] != want {
		t.Errorf("WWW-Authenticate: got %q, want %q", got, want)
	}
	if method == "HEAD" {
		return
	}
	body := make([]byte, 4096)
	n, _ := resp.Body.Read(body)
	eb, ok := petstoretest.CheckErrorBody(t, resp.StatusCode, resp.Header, body[:n])
	if ok && (eb.Code != codeInsufficientScope || !strings.Contains(eb.Message, `"`+scope+`"`)) {
		t.Errorf("body: got code %q message %q, want insufficient_scope naming %q", eb.Code, eb.Message, scope)
	}
}

// Every scope against every kind of operation, through the real mux: a key
// with the scope gets the operation's own answer, a key without it 403
// insufficient_scope with the challenge naming the scope the operation
// needs, HEAD included; write brings read; a key without scopes has all;
// public routes need no key, and a scoped key changes nothing there.
func TestKeyScopesThroughTheMux(t *testing.T) {
	t.Parallel()
	env := scopedEnv(t)
	if rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"seed"}`, header: bearer(allKey)}); rec.Code != http.StatusCreated {
		t.Fatalf("create with a key without scopes: got %d, want 201", rec.Code)
	}
	type operation struct {
		method, path string
		scope        string
		status       int // with the scope
	}
	operations := []operation{
		{"GET", "/v1/categories", "read", http.StatusOK},
		{"HEAD", "/v1/categories", "read", http.StatusOK},
		{"GET", "/v1/categories/1", "read", http.StatusOK},
		{"HEAD", "/v1/categories/1", "read", http.StatusOK},
		{"GET", "/v1/pets/1", "read", http.StatusNotImplemented},
		{"GET", "/v1/store/orders", "read", http.StatusNotImplemented},
		{"POST", "/v1/categories", "write", http.StatusCreated},
		{"GET", "/metrics", "metrics", http.StatusOK},
		{"HEAD", "/metrics", "metrics", http.StatusOK},
	}
	grants := map[string][]string{
		readKey:    {"read"},
		writeKey:   {"read", "write"},
		metricsKey: {"metrics"},
		mixedKey:   {"read", "write", "metrics"},
		allKey:     {"read", "write", "metrics"},
	}
	created := 0
	for key, granted := range grants {
		for _, op := range operations {
			t.Run(fmt.Sprintf("%s/%s %s", key, op.method, op.path), func(t *testing.T) {
				var body string
				if op.method == "POST" {
					created++
					body = fmt.Sprintf(`{"name":"made %d"}`, created)
				}
				rec := env.do(t, request{method: op.method, path: op.path, body: body, header: bearer(key)})
				if !strings.Contains(" "+strings.Join(granted, " ")+" ", " "+op.scope+" ") {
					mustInsufficientScope(t, op.method, rec, op.scope)
					return
				}
				if rec.Code != op.status {
					t.Errorf("got %d, want %d; body %s", rec.Code, op.status, rec.Body)
				}
				if got := rec.Header().Get("Www-Authenticate"); got != "" {
					t.Errorf("an allowed request has WWW-Authenticate %q", got)
				}
			})
		}
	}
	for _, path := range []string{"/healthz", "/v1/openapi.json", "/v1/openapi-3.0.json"} {
		for _, header := range []map[string]string{{}, bearer(metricsKey), bearer(readKey)} {
			for _, method := range []string{"GET", "HEAD"} {
				if rec := env.do(t, request{method: method, path: path, header: header}); rec.Code != http.StatusOK {
					t.Errorf("%s %s with %v: got %d, want 200 (public)", method, path, header, rec.Code)
				}
			}
		}
	}
}

// The scope is checked after the key and the rate limit, and before the
// query, the sunset and the body: a read key's create with a bad body or a
// query is 403, its connection closed rather than its body read; an unknown
// key is still 401; the 403 spends from the key's budget, and says so. The
// access line names the key by its fingerprint, and the request counter
// counts the 403 under its route.
func TestKeyScopeOrder(t *testing.T) {
	t.Parallel()
	now := beforePetsSunset
	env := scopedEnv(t, withRateLimit(testRateLimit(t, "2/m", func() time.Time { return now })))

	h := bearer(readKey)
	h["X-Request-Id"] = "scope-refused"
	rec := env.do(t, request{method: "POST", path: "/v1/categories?x=1", body: `{not json`, header: h})
	mustInsufficientScope(t, "POST", rec, "write")
	if got := rec.Header().Get("Connection"); got != "close" {
		t.Errorf("403 with an unread body: Connection %q, want close", got)
	}
	if got := rec.Header().Get("RateLimit"); got != `"default";r=1;t=30` {
		t.Errorf("403: RateLimit %q, want the budget spent by one", got)
	}
	rec = env.do(t, request{method: "GET", path: "/v1/pets/1", header: bearer(metricsKey)})
	mustInsufficientScope(t, "GET", rec, "read")
	if rec.Header().Get("Deprecation") == "" {
		t.Errorf("a deprecated route's 403 lacks its Deprecation header")
	}
	mustError(t, env.do(t, request{method: "POST", path: "/v1/categories", body: `{}`, header: bearer("scope-unknown-Key-Xx0")}), http.StatusUnauthorized, codeUnauthorized)

	// The read key's budget (2) is spent by one more request: the next is 429, not 403.
	env.do(t, request{method: "GET", path: "/v1/categories", header: bearer(readKey)})
	mustError(t, env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"x"}`, header: bearer(readKey)}), http.StatusTooManyRequests, codeRateLimited)

	sum := sha256.Sum256([]byte(readKey))
	line := petstoretest.FindLog(petstoretest.ParseLogLines(t, env.logs.Lines()), "request", map[string]any{"request_id": "scope-refused"})
	if line == nil || line["status"] != float64(http.StatusForbidden) || line["key"] != hex.EncodeToString(sum[:4]) {
		t.Errorf("access line of the 403: got %v, want status 403 and the read key's fingerprint", line)
	}
	counted := samples(t, scrapeWith(t, env, metricsKey))
	if got := counted[`petstore_http_requests_total{method="POST",route="POST /v1/categories",code="403"}`]; got != 1 {
		t.Errorf("403s of POST /v1/categories counted: %v, want 1", got)
	}
	petstoretest.CheckNoSecrets(t, env.logs.Lines(), readKey, metricsKey)
}

// scrapeWith takes GET /metrics with key.
func scrapeWith(t *testing.T, env *testEnv, key string) string {
	t.Helper()
	rec := env.do(t, request{method: "GET", path: "/metrics", header: bearer(key)})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: got %d, want 200", rec.Code)
	}
	return rec.Body.String()
}

// A key file with scopes: a bad scope stops the start naming the file and
// the line; through the ring, a reload moves a key to another scope at
// once, a bad line keeps the set in force, and each load logs the keys of
// each scope, never a key.
func TestKeyScopesReload(t *testing.T) {
	t.Parallel()
	const fileKey, envKey, otherKey = "scope-file-Key-Vb7Nq2", "scope-env-Key-Rk5Dn1", "scope-other-Key-Gy6Pc3"
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# scopes\n\n" + fileKey + ":metrics+\n")
	if _, err := loadConfig(mapEnv(map[string]string{"PETSTORE_API_KEYS_FILE": file})); err == nil ||
		!containsAll(err.Error(), "PETSTORE_API_KEYS_FILE", file, "line 3", "empty scope") || strings.Contains(err.Error(), fileKey) {
		t.Errorf("start with a bad scope on line 3: got %v, want an error naming the file and line 3, not the key", err)
	}

	write(fileKey + ":read\n")
	cfg, err := loadConfig(mapEnv(map[string]string{"PETSTORE_API_KEYS": envKey + ":metrics", "PETSTORE_API_KEYS_FILE": file}))
	if err != nil {
		t.Fatal(err)
	}
	ring := apikey.NewRing(cfg.keys)
	logs := &lockedBuffer{}
	rotation := cfg.keyFile.Rotation(ring, cfg.envKeys, cfg.filePoll, slog.New(slog.NewJSONHandler(logs, nil)))
	env := newTestEnv(t, func(d *deps, _ *[]route) { d.keys = ring })
	create := func(key, name string) int {
		return env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"` + name + `"}`, header: bearer(key)}).Code
	}
	if got := create(fileKey, "a"); got != http.StatusForbidden {
		t.Fatalf("create with the file's read key: got %d, want 403", got)
	}

	write("# the same key may now create\n" + fileKey + ":write\n" + otherKey + ":read+metrics\n")
	rotation.Reload("SIGHUP")
	if got := create(fileKey, "b"); got != http.StatusCreated {
		t.Errorf("create after the key was given write: got %d, want 201", got)
	}
	reloaded := petstoretest.FindLog(petstoretest.ParseLogLines(t, logs.Lines()), "API keys reloaded", nil)
	want := map[string]any{"read": 2.0, "write": 1.0, "metrics": 2.0}
	if reloaded == nil || fmt.Sprint(reloaded["key_scopes"]) != fmt.Sprint(want) || reloaded["api_keys"] != 3.0 {
		t.Errorf("reload log: got %v, want api_keys 3 and key_scopes %v", reloaded, want)
	}

	write(fileKey + ":read\n" + otherKey + ":write+Metrics\n")
	rotation.Reload("SIGHUP")
	refused := petstoretest.FindLog(petstoretest.ParseLogLines(t, logs.Lines()), "API keys not reloaded; the keys in force stay", nil)
	if refused == nil || !containsAll(refused["error"], file, "line 2", "none of read, write and metrics") {
		t.Errorf("a bad scope on line 2: got %v, want an error naming the file and line 2", refused)
	}
	if got := create(fileKey, "c"); got != http.StatusCreated {
		t.Errorf("after a bad file: the key lost its write scope (got %d, want 201)", got)
	}
	petstoretest.CheckNoSecrets(t, logs.Lines(), fileKey, envKey, otherKey, "Metrics")
}

// Through the binary: the listening line counts the keys of each scope
// from the variable and the file, a scoped key is refused with the
// challenge over the wire, and SIGHUP with a bad scope keeps the set.
func TestKeyScopesBinary(t *testing.T) {
	t.Parallel()
	const envRead, envAll, fileMetrics = "bin-scope-read-Key-Ts4", "bin-scope-all-Key-Fw8", "bin-scope-metrics-Key-Np2"
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte(fileMetrics+":metrics\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := petstoretest.Start(t, map[string]string{"PETSTORE_API_KEYS": envRead + ":read," + envAll, "PETSTORE_API_KEYS_FILE": file})
	listening := p.WaitLog(time.Second, func(l petstoretest.LogLine) bool { return l["msg"] == "listening" })
	want := map[string]any{"read": 2.0, "write": 1.0, "metrics": 2.0}
	if listening == nil || fmt.Sprint(listening["key_scopes"]) != fmt.Sprint(want) {
		t.Errorf("listening line: got %v, want key_scopes %v", listening, want)
	}
	client := petstoretest.NewClient(t)
	resp, body := petstoretest.Send(t, client, "POST", p.URL("/v1/categories"), envRead, `{"name":"dog"}`, nil)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Www-Authenticate") != `Bearer realm="petstore", error="insufficient_scope", scope="write"` ||
		!strings.Contains(string(body), `"code":"insufficient_scope"`) {
		t.Errorf("create with a read key: got %d %q %s", resp.StatusCode, resp.Header.Get("Www-Authenticate"), body)
	}
	if resp, _ := petstoretest.Send(t, client, "GET", p.URL("/metrics"), fileMetrics, "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("metrics with the file's metrics key: got %d", resp.StatusCode)
	}

	if err := os.WriteFile(file, []byte(fileMetrics+":metrics+metrics\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Signal(t, syscall.SIGHUP)
	if p.WaitLog(5*time.Second, func(l petstoretest.LogLine) bool {
		return l["msg"] == "API keys not reloaded; the keys in force stay" && containsAll(l["error"], file, "line 1", "twice")
	}) == nil {
		t.Fatalf("no error naming %s, line 1 and the repeated scope", file)
	}
	if resp, _ := petstoretest.Send(t, client, "GET", p.URL("/metrics"), fileMetrics, "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("metrics after a bad reload: got %d, want the key kept", resp.StatusCode)
	}
	p.Stop(t)
	petstoretest.CheckNoSecrets(t, p.Stderr.Lines(), envRead, envAll, fileMetrics)
}

// A route that needs a key must name one scope, and a public one none:
// newServer refuses a table that forgets.
func TestRoutesNameOneScope(t *testing.T) {
	t.Parallel()
	ok := http.NotFoundHandler()
	d := deps{store: store.NewMemory(store.Options{}), keys: apikey.NewRing(apikey.AllScopes(testKey)), log: slog.New(slog.DiscardHandler), now: time.Now}
	for _, rt := range []route{
		{method: "GET", path: "/v1/test-noscope", handler: ok},
		{method: "GET", path: "/v1/test-twoscopes", handler: ok, scope: apikey.Read | apikey.Write},
		{method: "GET", path: "/v1/test-unknownscope", handler: ok, scope: apikey.All + 1},
		{method: "GET", path: "/v1/test-publicscope", handler: ok, public: true, scope: apikey.Read},
	} {
		if _, _, err := newServer(d, rt); err == nil || !strings.Contains(err.Error(), rt.path) {
			t.Errorf("route %s: newServer gave %v, want an error naming it", rt.path, err)
		}
	}
	if _, _, err := newServer(d, route{method: "GET", path: "/v1/test-scoped", handler: ok, scope: apikey.Metrics}); err != nil {
		t.Errorf("a route with one scope: %v", err)
	}
}

// The OpenAPI documents describe the scopes: in 3.1 each operation that
// needs a key names its scope in its security requirement, and every such
// operation, in both documents, documents the 403 with its challenge and
// the scope in words; 3.0, which allows no roles for a bearer scheme,
// leaves the requirement's list empty.
func TestOpenAPIScopes(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	ops31 := documentedOperations(t, fetchDocument(t, env))
	ops30 := documentedOperations(t, fetchDocumentAt(t, env, "/v1/openapi-3.0.json"))
	for _, rt := range routes(deps{store: env.store}, nil, nil, nil) {
		for _, method := range rt.methods() {
			key := method + " " + rt.path
			for version, op := range map[string]map[string]any{"3.1": ops31[key], "3.0": ops30[key]} {
				forbidden := openapitest.At(op, "responses", "403")
				if rt.public {
					if forbidden != nil {
						t.Errorf("%s %s: a public operation documents 403", version, key)
					}
					continue
				}
				want := []any{rt.scope.String()}
				if version == "3.0" {
					want = []any{}
				}
				if got := openapitest.At(op, "security"); fmt.Sprint(got) != fmt.Sprint([]any{map[string]any{"bearerAuth": want}}) {
					t.Errorf("%s %s: security %v, want bearerAuth %v", version, key, got, want)
				}
				desc, _ := openapitest.At(forbidden, "description").(string)
				if !strings.Contains(desc, "`insufficient_scope`") || !strings.Contains(desc, "`"+rt.scope.String()+"`") || openapitest.At(forbidden, "headers", "WWW-Authenticate") == nil {
					t.Errorf("%s %s: 403 %v, want insufficient_scope, the scope %s and WWW-Authenticate", version, key, forbidden, rt.scope)
				}
			}
		}
	}
	if desc := openapitest.At(ops31["POST /v1/categories"], "responses", "403", "description").(string); !strings.Contains(desc, "`quota_exceeded`") {
		t.Errorf("POST /v1/categories: the 403 lost quota_exceeded: %s", desc)
	}
}

// A request with two Authorization fields is 400 invalid_parameter on
// every route that needs a key, before any key is tried (RFC 9110 section
// 5.3: the field is not a list), whatever the two hold; a public route
// does not read the field.
func TestTwoAuthorizationHeaders(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for _, rt := range routes(deps{store: env.store}, nil, nil, nil) {
		path := strings.NewReplacer("{id}", "1", "{petId}", "1").Replace(rt.path)
		for _, pair := range [][2]string{{"Bearer " + testKey, "Bearer " + testKey}, {"Bearer " + testKey, "Bearer wrong-key-of-16-chars"}} {
			r := httptest.NewRequest(rt.method, path, nil)
			r.Header["Authorization"] = pair[:]
			rec := httptest.NewRecorder()
			env.handler.ServeHTTP(rec, r)
			if rt.public {
				if rec.Code == http.StatusBadRequest {
					t.Errorf("%s %s, public: 400 for two Authorization fields", rt.method, rt.path)
				}
				continue
			}
			e := mustError(t, rec, http.StatusBadRequest, codeInvalidParameter)
			if !strings.Contains(e.Message, "Authorization") || rec.Header().Get("WWW-Authenticate") != "" {
				t.Errorf("%s %s: %q, WWW-Authenticate %q; want a message naming Authorization and no challenge", rt.method, rt.path, e.Message, rec.Header().Get("WWW-Authenticate"))
			}
		}
	}
}
