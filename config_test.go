package main

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/envconf"
	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// Tests of loadConfig (config.go), which reads the environment only through
// the getenv it is given: here a map, so that the tests run in parallel. The
// keys it reads are tried through the real mux.

// mapEnv is a getenv backed by a map.
func mapEnv(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestLoadConfigKeys(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "keys")
	const fileContents = "# keys of the petstore\n\nfile-key-one-Dv7Kr\n   \n  # an indented comment\n\tfile-key-two-Ej3Ps  \r\n\n"
	if err := os.WriteFile(keyFile, []byte(fileContents), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(mapEnv(map[string]string{
		"PETSTORE_API_KEYS":      "env-key-one-Bx5Qn, env-key-two-Cw2Lp",
		"PETSTORE_API_KEYS_FILE": keyFile,
	}))
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	wantKeys := []string{"env-key-one-Bx5Qn", "env-key-two-Cw2Lp", "file-key-one-Dv7Kr", "file-key-two-Ej3Ps"}
	var gotKeys []string
	for _, k := range cfg.keys {
		if k.Scopes != apikey.All {
			t.Errorf("a key written without scopes has %v, want every scope", k.Scopes)
		}
		gotKeys = append(gotKeys, k.Secret)
	}
	slices.Sort(gotKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("keys: got %q, want %q", gotKeys, wantKeys)
	}
	if cfg.generatedKey {
		t.Errorf("generatedKey: got true, want false with keys configured")
	}

	env := newTestEnv(t, withAcceptedKeys(cfg.keys))
	get := func(authorization string) *httptest.ResponseRecorder {
		return env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": authorization}})
	}
	for _, key := range wantKeys {
		if rec := get("Bearer " + key); rec.Code != http.StatusOK {
			t.Errorf("key %q: got %d, want 200", key, rec.Code)
		}
	}
	for _, key := range []string{testKey, "#", "file-key", "env-key-one-Bx5Qn,", "env-key-one", "env-key-one-Bx5Qn, env-key-two-Cw2Lp"} {
		rec := get("Bearer " + key)
		mustError(t, rec, http.StatusUnauthorized, codeUnauthorized)
	}
}

func TestLoadConfigGeneratesKey(t *testing.T) {
	t.Parallel()
	var keys []string
	for range 2 {
		cfg, err := loadConfig(mapEnv(nil))
		if err != nil {
			t.Fatalf("loadConfig: %v", err)
		}
		if !cfg.generatedKey {
			t.Errorf("generatedKey: got false, want true with no key configured")
		}
		if len(cfg.keys) != 1 {
			t.Fatalf("keys: got %d, want 1 generated key", len(cfg.keys))
		}
		key := cfg.keys[0].Secret
		if cfg.keys[0].Scopes != apikey.All {
			t.Errorf("the generated key has %v, want every scope", cfg.keys[0].Scopes)
		}
		if len(key) != 43 {
			t.Errorf("generated key %q: got %d characters, want 43", key, len(key))
		}
		if !apikey.IsToken(key) {
			t.Errorf("generated key %q cannot be sent as a bearer token", key)
		}
		keys = append(keys, key)

		// The generated key works.
		env := newTestEnv(t, withAcceptedKeys(cfg.keys))
		rec := env.do(t, request{method: "GET", path: "/v1/categories", header: map[string]string{"Authorization": "Bearer " + key}})
		mustStatus(t, rec, http.StatusOK)
	}
	if keys[0] == keys[1] {
		t.Errorf("two starts generated the same key %q", keys[0])
	}
}

// An unset variable stands for the default configVars gives it, which is
// the one the stores assume when given none.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(mapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.addr != ":8080" || cfg.dataPath != "petstore.jsonl" || cfg.maxConns != 10000 || cfg.filePoll != 2*time.Second ||
		cfg.drainDelay != 0 || cfg.rateLimit != nil || cfg.cors != nil || cfg.tls != nil {
		t.Errorf("defaults: %+v", cfg)
	}
	if cfg.idemTTL != store.DefaultIdempotencyTTL || cfg.maxCats != store.DefaultMaxCategories {
		t.Errorf("Idempotency-Key lifetime %v and catalogue cap %d, want the stores' defaults %v and %d",
			cfg.idemTTL, cfg.maxCats, store.DefaultIdempotencyTTL, store.DefaultMaxCategories)
	}
	etcdCfg, err := loadEtcdConfig(mapEnv(nil), "etcd://127.0.0.1:2379")
	if err != nil || etcdCfg.StartTimeout != store.DefaultEtcdStartTimeout {
		t.Errorf("etcd start timeout %v (%v), want the store's default %v", etcdCfg.StartTimeout, err, store.DefaultEtcdStartTimeout)
	}
	want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !cfg.pets.at.Equal(want) || !cfg.pets.sunset.Equal(want.AddDate(1, 0, 0)) {
		t.Errorf("pets deprecation %v, sunset %v", cfg.pets.at, cfg.pets.sunset)
	}
}

// Each kind of value is refused the same way: the variable, the value
// quoted and cut, what is wanted.
func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]string{
		"PETSTORE_ADDR":            "8080",
		"PETSTORE_MAX_CONNS":       "010",
		"PETSTORE_MAX_CATEGORIES":  "1e6",
		"PETSTORE_IDEMPOTENCY_TTL": "0s",
		"PETSTORE_SHUTDOWN_DELAY":  "-5s",
		"PETSTORE_FILE_POLL":       "1ms",
		"PETSTORE_PETS_SUNSET":     "next year",
	} {
		_, err := loadConfig(mapEnv(map[string]string{name: v}))
		if err == nil || !strings.HasPrefix(err.Error(), name+`: "`+v+`" is not `) || !strings.Contains(err.Error(), "such as") {
			t.Errorf("%s=%q: got %v, want the variable, the value quoted and what is wanted", name, v, err)
		}
	}
}

// README's table of variables lists exactly those of configVars, with the
// same defaults; README and docs name no variable petstore does not read.
func TestConfigVarsDocumented(t *testing.T) {
	t.Parallel()
	known := map[string]envconf.Var{}
	for _, v := range configVars {
		known[v.Name] = v
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| .* \\| (.*) \\|$")
	listed := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		name, dflt := m[1], m[2]
		v, ok := known[name]
		switch {
		case !ok:
			t.Errorf("README's table lists %s, which petstore does not read", name)
		case v.Default != "" && dflt != "`"+v.Default+"`":
			t.Errorf("README gives %s the default %s, petstore %q", name, dflt, v.Default)
		}
		listed[name] = true
	}
	for name := range known {
		if !listed[name] && strings.HasPrefix(name, "PETSTORE_") { // not Go's own GOMAXPROCS, GOGC
			t.Errorf("README's table does not list %s", name)
		}
	}
	docs, _ := filepath.Glob("docs/*.md")
	mentioned := regexp.MustCompile(`\bPETSTORE_[A-Z0-9_]+\b`)
	for _, doc := range append(docs, "README.md") {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range mentioned.FindAllString(string(text), -1) {
			if _, ok := known[name]; !ok && !notConfigVars[name] && !isAnyServiceLink(name) && !strings.HasPrefix(name, "PETSTORE_TEST_") {
				t.Errorf("%s names %s, which petstore does not read", doc, name)
			}
		}
	}
}

// notConfigVars are named like petstore's variables but are not: one the
// benchmarks read, and the misspelling the docs show petstore naming.
var notConfigVars = map[string]bool{"PETSTORE_BENCH_CATEGORIES": true, "PETSTORE_API_KEY": true}

// A PETSTORE_ variable petstore does not read is named at start, with the
// name it is likely a misspelling of, in a warning and in the listening
// line; never its value. The start goes on. Kubernetes' service links are
// not petstore's and are passed over: always those of a Service petstore,
// inside Kubernetes those of petstore-… too.
func TestUnknownVariablesAreNamed(t *testing.T) {
	t.Parallel()
	const typoKey = "typo-Secret-Value-Wq4Zr8"
	env := baseEnv(":memory:")
	values := map[string]string{
		"PETSTORE_API_KEY":      typoKey,
		"PETSTORE_TLS_CERTFILE": "/value/of/PETSTORE_TLS_CERTFILE.pem",
		"PETSTORE_FROBNICATE":   "value-of-frobnicate",
		// Inside Kubernetes: a Service named petstore, and one named
		// petstore-etcd.
		"KUBERNETES_SERVICE_HOST":              "10.0.0.9",
		"PETSTORE_SERVICE_HOST":                "10.0.0.1",
		"PETSTORE_SERVICE_PORT":                "8080",
		"PETSTORE_SERVICE_PORT_HTTP":           "8080",
		"PETSTORE_PORT":                        "tcp://10.0.0.1:8080",
		"PETSTORE_PORT_8080_TCP":               "tcp://10.0.0.1:8080",
		"PETSTORE_PORT_8080_TCP_PROTO":         "tcp",
		"PETSTORE_PORT_8080_TCP_PORT":          "8080",
		"PETSTORE_PORT_8080_TCP_ADDR":          "10.0.0.1",
		"PETSTORE_ETCD_SERVICE_HOST":           "10.0.0.2",
		"PETSTORE_ETCD_SERVICE_PORT_CLIENT":    "2379",
		"PETSTORE_ETCD_PORT_2379_TCP_ADDR":     "10.0.0.2",
		"PETSTORE_ETCD_PORT_2380_TCP":          "tcp://10.0.0.2:2380",
		"PETSTORE_ETCD_PORT_2380_TCP_PROTOCOL": "tcp", // not a link: no such suffix
	}
	maps.Copy(env, values)
	svc := startRun(t, env)
	mustCreateVia(t, http.DefaultClient, svc.url(""), "dog", 1)

	lines := strings.Split(strings.TrimSpace(svc.stderr.String()), "\n")
	logs := petstoretest.ParseLogLines(t, lines)
	want := map[string]string{ // name: nearest
		"PETSTORE_API_KEY":                     "PETSTORE_API_KEYS",
		"PETSTORE_TLS_CERTFILE":                "PETSTORE_TLS_CERT_FILE",
		"PETSTORE_FROBNICATE":                  "",
		"PETSTORE_ETCD_PORT_2380_TCP_PROTOCOL": "",
	}
	warned := map[string]string{}
	for _, l := range logs {
		if name, ok := l["variable"].(string); ok && l["level"] == "WARN" {
			warned[name], _ = l["nearest"].(string)
			msg, _ := l["msg"].(string)
			if !strings.HasPrefix(msg, name+" is not a variable petstore reads; it is ignored") {
				t.Errorf("the warning for %s: %q", name, msg)
			}
			if near := want[name]; near != "" && !strings.HasSuffix(msg, "Did you mean "+near+"?") {
				t.Errorf("the warning for %s does not suggest %s: %q", name, near, msg)
			}
		}
	}
	if !maps.Equal(warned, want) {
		t.Errorf("warned (name: nearest) %v, want %v", warned, want)
	}
	listening := petstoretest.FindLog(logs, "listening", nil)
	var listed []string
	for _, v := range listening["unknown_variables"].([]any) {
		listed = append(listed, v.(string))
	}
	slices.Sort(listed)
	if wantListed := slices.Sorted(maps.Keys(want)); !slices.Equal(listed, wantListed) {
		t.Errorf("the listening line's unknown_variables: %v, want %v", listed, wantListed)
	}
	var vals []string
	for name, v := range values {
		if _, unknown := want[name]; unknown {
			vals = append(vals, v)
		}
	}
	petstoretest.CheckNoSecrets(t, lines, vals...)

	// Without one, the listening line has no such member.
	plain := startRun(t, baseEnv(":memory:"))
	logs = petstoretest.ParseLogLines(t, strings.Split(strings.TrimSpace(plain.stderr.String()), "\n"))
	if l := petstoretest.FindLog(logs, "listening", nil); l == nil || l["unknown_variables"] != nil {
		t.Errorf("the listening line of a start without unknown variables: %v", l)
	}

	// The commands that read PETSTORE_DATA name them too.
	path := writeJournal(t)
	_, stderr, err := runCommand(t, map[string]string{"PETSTORE_DATA": path, "PETSTORE_DAT": "/elsewhere.jsonl"}, "-export")
	if err != nil {
		t.Fatalf("-export: %v", err)
	}
	if !strings.Contains(stderr, `"msg":"PETSTORE_DAT is not a variable petstore reads; it is ignored. Did you mean PETSTORE_DATA?"`) || strings.Contains(stderr, "/elsewhere") {
		t.Errorf("-export's stderr: %s", stderr)
	}

	// Outside Kubernetes only a Service petstore's links are passed over:
	// PETSTORE_HTTP_PORT is someone's mistake.
	_, stderr, err = runCommand(t, map[string]string{"PETSTORE_DATA": path, "PETSTORE_HTTP_PORT": "9090",
		"PETSTORE_ETCD_SERVICE_HOST": "10.0.0.2", "PETSTORE_SERVICE_HOST": "10.0.0.1", "PETSTORE_PORT": "tcp://10.0.0.1:8080"}, "-export")
	if err != nil {
		t.Fatalf("-export: %v", err)
	}
	for name, want := range map[string]bool{"PETSTORE_HTTP_PORT": true, "PETSTORE_ETCD_SERVICE_HOST": true, "PETSTORE_SERVICE_HOST": false, "PETSTORE_PORT": false} {
		if got := strings.Contains(stderr, `"variable":"`+name+`"`); got != want {
			t.Errorf("outside Kubernetes, %s named: %v, want %v; stderr:\n%s", name, got, want, stderr)
		}
	}
}

func TestServiceLinks(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"PETSTORE_SERVICE_HOST": true, "PETSTORE_SERVICE_PORT": true, "PETSTORE_SERVICE_PORT_HTTPS": true,
		"PETSTORE_PORT": true, "PETSTORE_PORT_8080_TCP": true, "PETSTORE_PORT_53_UDP_ADDR": true,
		"PETSTORE_PORT_9_SCTP_PROTO": true, "PETSTORE_DB_SERVICE_HOST": true, "PETSTORE_DB_PORT_5432_TCP_PORT": true,
		"PETSTORE_PORTS": false, "PETSTORE_PORT_8080": false, "PETSTORE_PORT_X_TCP": false,
		"PETSTORE_SERVICE": false, "PETSTORE_API_KEY": false, "PETSTORE_SERVICE_HOSTS": false,
		"petstore_service_host": false, "PETSTORE__SERVICE_HOST": false,
	} {
		if got := isAnyServiceLink(name); got != want {
			t.Errorf("isAnyServiceLink(%q) = %v, want %v", name, got, want)
		}
		petstores := want && !strings.HasPrefix(name, "PETSTORE_DB_")
		if got := isServiceLink(name); got != petstores {
			t.Errorf("isServiceLink(%q) = %v, want %v", name, got, petstores)
		}
	}
}
