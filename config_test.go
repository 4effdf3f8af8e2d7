package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
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
		if k.Scopes != scopeAll {
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
		if cfg.keys[0].Scopes != scopeAll {
			t.Errorf("the generated key has %v, want every scope", cfg.keys[0].Scopes)
		}
		if len(key) != 43 {
			t.Errorf("generated key %q: got %d characters, want 43", key, len(key))
		}
		if !isBearerToken(key) {
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
