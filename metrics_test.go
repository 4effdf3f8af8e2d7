package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/metrics"
	"petstore/internal/openapi"
	"petstore/internal/petstoretest"
	"petstore/internal/ratelimit"
	"petstore/internal/store"
	"petstore/internal/testkit"
)

// withRateLimit limits requests per key with b.
func withRateLimit(b *ratelimit.Buckets) testOption {
	return func(d *deps, _ *[]route) { d.rateLimit = b }
}

// scrape takes GET /metrics with the test key and returns its body.
func scrape(t *testing.T, env *testEnv) string {
	t.Helper()
	rec := env.do(t, request{method: "GET", path: "/metrics", header: map[string]string{"Authorization": "Bearer " + testKey}})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: got %d, want 200; body %s", rec.Code, rec.Body)
	}
	if got, want := rec.Header().Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8"; got != want {
		t.Errorf("Content-Type: got %q, want %q", got, want)
	}
	return rec.Body.String()
}

// samples parses the text format into "name{labels}" → value, checking
// that every sample line parses and that every family has HELP and TYPE
// before its samples.
func samples(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	typed := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			typed[strings.Fields(rest)[0]] = true
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("sample line without a value: %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		name := line[:i]
		family, _, _ := strings.Cut(name, "{")
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(family, "_bucket"), "_sum"), "_count")
		if !typed[family] && !typed[base] {
			t.Errorf("sample %q comes before its family's TYPE line", name)
		}
		if _, dup := out[name]; dup {
			t.Errorf("sample %q appears twice", name)
		}
		out[name] = v
	}
	return out
}

// trafficOfEveryStatus sends requests that answer every status the service
// gives, and returns how many it sent of each "method route code".
func trafficOfEveryStatus(t *testing.T, env *testEnv) map[string]int {
	t.Helper()
	sent := map[string]int{}
	send := func(method, path, route, body string, header map[string]string, want int) {
		t.Helper()
		rec := env.do(t, request{method: method, path: path, body: body, header: header})
		if rec.Code != want {
			t.Fatalf("%s %s: got %d, want %d; body %s", method, path, rec.Code, want, rec.Body)
		}
		sent[method+" "+route+" "+strconv.Itoa(want)]++
	}
	key := map[string]string{"Authorization": "Bearer " + testKey}
	send("POST", "/v1/categories", "POST /v1/categories", `{"name":"dog"}`, nil, 201)
	send("GET", "/v1/categories", "GET /v1/categories", "", key, 200)
	send("HEAD", "/v1/categories", "GET /v1/categories", "", key, 200)
	etag := env.do(t, request{method: "GET", path: "/v1/categories", header: key}).Header().Get("ETag")
	sent["GET GET /v1/categories 200"]++
	send("GET", "/v1/categories", "GET /v1/categories", "", map[string]string{"Authorization": "Bearer " + testKey, "If-None-Match": etag}, 304)
	send("POST", "/v1/categories", "POST /v1/categories", `{"name":1}`, nil, 400)
	send("POST", "/v1/categories", "POST /v1/categories", `{"name":"dog"}`, nil, 409)
	send("POST", "/v1/categories", "POST /v1/categories", `{"name":"x"}`, map[string]string{"Authorization": "Bearer " + testKey, "Content-Type": "text/plain"}, 415)
	send("POST", "/v1/categories", "POST /v1/categories", `{"name":"`+strings.Repeat("x", maxBodyBytes)+`"}`, nil, 413)
	send("GET", "/v1/categories", "GET /v1/categories", "", map[string]string{}, 401)
	send("GET", "/v1/categories/999", "GET /v1/categories/{id}", "", key, 404)
	send("GET", "/no/such/path", "unmatched", "", key, 404)
	send("DELETE", "/v1/categories", "unmatched", "", key, 405)
	send("BREW", "/v1/categories", "unmatched", "", key, 405)
	send("GET", "/v1/store/orders", "GET /v1/store/orders", "", key, 501)
	send("GET", "/v1/test-panic", "GET /v1/test-panic", "", key, 500)
	send("GET", "/v1/pets/1", "GET /v1/pets/{petId}", "", key, 410)
	send("GET", "/healthz", "GET /healthz", "", map[string]string{}, 200)
	return sent
}

// newMetricsEnv is a service with a panic route, a sunset past and a limit
// a test can spend: every status can be reached through it.
func newMetricsEnv(t *testing.T) *testEnv {
	clock := testkit.NewClock()
	panicking := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("metrics test") })
	return newTestEnv(t, withNow(afterPetsSunset), withRateLimit(testRateLimit(t, "1000/s", clock.Now)),
		withRoute(route{method: "GET", path: "/v1/test-panic", operationID: "testPanic", handler: panicking, scope: apikey.Read}))
}

// promtoolPath returns the promtool binary. Without one the test skips
// loudly, saying what was not checked, unless PETSTORE_TEST_REQUIRE_PROMTOOL
// is set (CI sets it): then it fails.
func promtoolPath(t *testing.T, what string) string {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("PETSTORE_TEST_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool is not installed and PETSTORE_TEST_REQUIRE_PROMTOOL is set (apt-get install prometheus)")
		}
		t.Skipf("SKIPPED LOUDLY: promtool is not installed (apt-get install prometheus); %s was NOT checked by Prometheus's own tool", what)
	}
	return promtool
}

// promtool's own check accepts the exposition after traffic of every
// status (docs/operations.md, "Metrics"). Without promtool the test skips
// loudly, unless PETSTORE_TEST_REQUIRE_PROMTOOL is set (CI sets it).
func TestMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	promtool := promtoolPath(t, "the exposition")
	env := newMetricsEnv(t)
	trafficOfEveryStatus(t, env)
	body := scrape(t, env)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s\nexposition:\n%s", err, out, body)
	}
	for _, family := range []string{
		"petstore_http_requests_total", "petstore_http_request_duration_seconds_bucket", "petstore_categories",
		"petstore_store_commit_batch_size_bucket", "petstore_store_commit_duration_seconds_bucket", "petstore_build_info",
		"go_goroutines", "go_threads", "go_info", "process_resident_memory_bytes", "process_start_time_seconds",
		"process_cpu_seconds_total", "process_open_fds", "process_max_fds",
	} {
		if !strings.Contains(body, "\n"+family) {
			t.Errorf("no %s in the exposition", family)
		}
	}
}

// Two scrapes: the request counters moved by exactly the requests made in
// between (the first scrape included, which counts once it is answered),
// and the histograms by as many observations.
func TestMetricsCountExactly(t *testing.T) {
	t.Parallel()
	env := newMetricsEnv(t)
	before := samples(t, scrape(t, env))
	sent := trafficOfEveryStatus(t, env)
	sent["GET GET /metrics 200"]++ // the first scrape
	after := samples(t, scrape(t, env))

	moved := map[string]int{}
	total := 0
	for name, v := range after {
		if !strings.HasPrefix(name, "petstore_http_requests_total{") {
			continue
		}
		if d := v - before[name]; d != 0 {
			labels := parseLabels(t, name)
			moved[labels["method"]+" "+labels["route"]+" "+labels["code"]] += int(d)
			total += int(d)
		}
	}
	for k, n := range sent {
		method, rest, _ := strings.Cut(k, " ")
		if method == "BREW" {
			k = "OTHER " + rest // invented methods share one label value
		}
		if moved[k] != n {
			t.Errorf("petstore_http_requests_total %s: moved by %d, want %d", k, moved[k], n)
		}
		delete(moved, k)
	}
	for k, n := range moved {
		t.Errorf("petstore_http_requests_total %s: moved by %d, but no such request was made", k, n)
	}
	count := func(m map[string]float64) (n float64) {
		for name, v := range m {
			if strings.HasPrefix(name, "petstore_http_request_duration_seconds_count{") {
				n += v
			}
		}
		return n
	}
	if d := count(after) - count(before); int(d) != total {
		t.Errorf("duration observations moved by %v, want %d", d, total)
	}
	if got := after["petstore_categories"]; got != 1 {
		t.Errorf("petstore_categories: got %v, want 1", got)
	}

}

// parseLabels reads the labels of a sample name such as
// x{method="GET",route="GET /v1/categories",code="200"}.
func parseLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	_, rest, _ := strings.Cut(name, "{")
	rest = strings.TrimSuffix(rest, "}")
	labels := map[string]string{}
	for rest != "" {
		k, v, ok := strings.Cut(rest, `="`)
		if !ok {
			t.Fatalf("labels of %q", name)
		}
		end := strings.Index(v, `"`)
		labels[k] = v[:end]
		rest = strings.TrimPrefix(v[end+1:], ",")
	}
	return labels
}

// A journal's commits are counted: one per write+fdatasync, with its size.
func TestMetricsCountCommits(t *testing.T) {
	t.Parallel()
	commits := newCommitMetrics()
	s := openTestStore(t, t.TempDir()+"/cats.jsonl", func(o *store.Options) { o.OnCommit = commits.observe })
	env := newTestEnv(t, withStore(s), func(d *deps, _ *[]route) { d.commits = commits })
	env.mustCreate(t, "dog")
	env.mustCreate(t, "cat")
	env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"DOG"}`}) // 409: nothing written
	got := samples(t, scrape(t, env))
	if n := got["petstore_store_commit_batch_size_count"]; n != 2 {
		t.Errorf("commits: got %v, want 2", n)
	}
	if sum := got["petstore_store_commit_batch_size_sum"]; sum != 2 {
		t.Errorf("creates committed: got %v, want 2", sum)
	}
	if sum := got["petstore_store_commit_duration_seconds_sum"]; !(sum > 0) || math.IsInf(sum, 0) {
		t.Errorf("commit time: got %v, want a positive number of seconds", sum)
	}
}

// The metrics need a key, like every operation but the document and the
// health check.
func TestMetricsNeedAKey(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	mustError(t, env.do(t, request{method: "GET", path: "/metrics", header: map[string]string{}}), http.StatusUnauthorized, codeUnauthorized)
}

// The access line names the accepted key by its fingerprint, never the key;
// a refused request has none.
func TestAccessLogKeyFingerprint(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": "Bearer " + testKey, "X-Request-Id": "fp-accepted"}})
	env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": "Bearer wrong-key", "X-Request-Id": "fp-refused"}})
	sum := sha256.Sum256([]byte(testKey))
	want := hex.EncodeToString(sum[:4])
	lines := petstoretest.ParseLogLines(t, env.logs.Lines())
	if l := petstoretest.FindLog(lines, "request", map[string]any{"request_id": "fp-accepted"}); l == nil || l["key"] != want {
		t.Errorf("accepted request's line: key %v, want %s", l["key"], want)
	}
	if l := petstoretest.FindLog(lines, "request", map[string]any{"request_id": "fp-refused"}); l == nil || l["key"] != nil {
		t.Errorf("refused request's line: key %v, want none", l["key"])
	}
	if strings.Contains(env.logs.String(), testKey) {
		t.Errorf("a key is in the log")
	}
}

// The Prometheus configuration of docs/operations.md, "Prometheus scrape"
// is one Prometheus accepts: promtool check config, with the key file it
// names beside it, as that section lays the files out.
func TestDocsScrapeConfig(t *testing.T) {
	t.Parallel()
	promtool := promtoolPath(t, "the scrape configuration of docs/operations.md")
	doc, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	config, _, _ := strings.Cut(rest, "```")
	if !ok || !strings.Contains(config, "scrape_configs:") || !strings.Contains(config, "scrape_interval:") {
		t.Fatalf("docs/operations.md has no yaml block with scrape_interval and scrape_configs")
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/prometheus.yml", []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/petstore.key", []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "config", dir+"/prometheus.yml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// Every route of the table has its documented statuses to count.
func TestMetricsRoutesListTheirStatuses(t *testing.T) {
	t.Parallel()
	table := routes(deps{}, nil, nil, nil)
	counted := documentedMetricRoutes(t, table)
	if len(counted) != 2*len(table) {
		t.Fatalf("%d routes counted, want %d (each, and its preflight)", len(counted), 2*len(table))
	}
	for _, c := range counted {
		if len(c.Statuses) < 3 || !slices.IsSorted(c.Statuses) || !slices.Contains(c.Statuses, 405) {
			t.Errorf("%s: counters for %v, want its documented statuses", c.Pattern, c.Statuses)
		}
	}
}

// documentedMetricRoutes returns the metric routes of table with the
// statuses the served document gives them, preflights included.
func documentedMetricRoutes(t testing.TB, table []route) []metrics.Route {
	t.Helper()
	_, doc, err := newServer(deps{store: store.NewMemory(store.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	statuses, err := openapi.Statuses(doc)
	if err != nil {
		t.Fatal(err)
	}
	return metricRoutes(table, statuses, true)
}

// A scrape after traffic on every route and method.
func BenchmarkMetricsScrape(b *testing.B) {
	counted := documentedMetricRoutes(b, routes(deps{}, nil, nil, nil))
	m := newServiceMetrics(counted, nil, store.NewMemory(store.Options{}))
	for _, rt := range counted {
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "BREW"} {
			m.requests.Observe(method, rt.Pattern, 200, time.Millisecond)
		}
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		m.writeTo(&buf)
	}
}

// The memory the counters of every route take, laid out at start.
func BenchmarkMetricsLayout(b *testing.B) {
	counted := documentedMetricRoutes(b, routes(deps{}, nil, nil, nil))
	b.ReportAllocs()
	for b.Loop() {
		newServiceMetrics(counted, nil, nil)
	}
}
