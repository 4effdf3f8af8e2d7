package main

import (
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
		if !listed[name] && name != "GOMAXPROCS" {
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
			if _, ok := known[name]; !ok && !notConfigVars[name] && !strings.HasPrefix(name, "PETSTORE_TEST_") {
				t.Errorf("%s names %s, which petstore does not read", doc, name)
			}
		}
	}
}

// notConfigVars are named like petstore's variables but read by other
// programs: the benchmarks, and the shell of docs/cluster.md.
var notConfigVars = map[string]bool{"PETSTORE_BENCH_CATEGORIES": true, "PETSTORE_A": true, "PETSTORE_B": true}
