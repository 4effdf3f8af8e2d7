package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/accesslog"
	"petstore/internal/apikey"
	"petstore/internal/journal"
	"petstore/internal/store"
	"petstore/internal/store/storetest"
	"petstore/internal/testkit"
)

// scopeOf is the scope of the Idempotency-Keys sent with API key apiKey.
func scopeOf(apiKey string) apikey.Digest { return apikey.Digest(sha256.Sum256([]byte(apiKey))) }

// keyedCreate posts body with an Idempotency-Key through env, as testKey
// (or apiKey, when given).
func keyedCreate(t *testing.T, env *testEnv, idemKey, body string, apiKey ...string) *httptest.ResponseRecorder {
	t.Helper()
	key := testKey
	if len(apiKey) > 0 {
		key = apiKey[0]
	}
	return env.do(t, request{method: "POST", path: "/v1/categories", body: body, header: map[string]string{
		"Authorization": "Bearer " + key, "Content-Type": "application/json", "Idempotency-Key": idemKey}})
}

// Safe retries through the real mux, on both local stores (docs/api.md,
// "Safe retries").
func TestIdempotentCreate(t *testing.T) {
	t.Parallel()
	inMemoryAndJournaled(t, testIdempotentCreate)
}

func testIdempotentCreate(t *testing.T, env *testEnv) {
	first := keyedCreate(t, env, `"retry-1"`, `{"name":"dog","description":"Loyal"}`)
	if first.Code != http.StatusCreated || first.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("first create: got %d, replayed %q; want 201, not replayed", first.Code, first.Header().Get("Idempotent-Replayed"))
	}
	// The same key and request: the same answer, marked, and nothing new.
	for _, spelling := range []string{`"retry-1"`, `retry-1`} {
		again := keyedCreate(t, env, spelling, `{"name":"  dog ","description":"Loyal"}`) // the same once validated
		if again.Code != http.StatusCreated || again.Body.String() != first.Body.String() ||
			again.Header().Get("Location") != first.Header().Get("Location") || again.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry as %s: got %d %s, Location %q, replayed %q; want the first answer replayed",
				spelling, again.Code, again.Body, again.Header().Get("Location"), again.Header().Get("Idempotent-Replayed"))
		}
	}
	if n := len(env.mustList(t)); n != 1 {
		t.Fatalf("categories after retries: got %d, want 1", n)
	}
	// The same key with another request.
	mustError(t, keyedCreate(t, env, `"retry-1"`, `{"name":"dog","description":"Other"}`), http.StatusUnprocessableEntity, codeIdempotencyKeyReused)
	// Another API key's key of the same text is another key.
	if rec := keyedCreate(t, env, `"retry-1"`, `{"name":"cat"}`, testKey2); rec.Code != http.StatusCreated || rec.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("the same key from another API key: got %d %s, want a new 201", rec.Code, rec.Body)
	}
	// Answers other than 201 store nothing: the retry is processed afresh.
	mustError(t, keyedCreate(t, env, `"retry-2"`, `{"name":""}`), http.StatusBadRequest, codeInvalidField)
	if rec := keyedCreate(t, env, `"retry-2"`, `{"name":"rabbit"}`); rec.Code != http.StatusCreated {
		t.Fatalf("a key whose first create was a 400: got %d %s, want 201", rec.Code, rec.Body)
	}
	mustError(t, keyedCreate(t, env, `"retry-3"`, `{"name":"DOG"}`), http.StatusConflict, codeConflict)
	if rec := keyedCreate(t, env, `"retry-3"`, `{"name":"hamster"}`); rec.Code != http.StatusCreated {
		t.Fatalf("a key whose first create was a 409: got %d %s, want 201", rec.Code, rec.Body)
	}
	// A key as clients generate it (crypto.randomUUID(), uuid.uuid4())
	// is taken bare, and is the same key as its quoted form.
	const uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	if rec := keyedCreate(t, env, uuid, `{"name":"ferret"}`); rec.Code != http.StatusCreated || rec.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("a bare UUID key: got %d %s, want a new 201", rec.Code, rec.Body)
	}
	if rec := keyedCreate(t, env, `"`+uuid+`"`, `{"name":"ferret"}`); rec.Code != http.StatusCreated || rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the same UUID quoted: got %d %s, want the 201 replayed", rec.Code, rec.Body)
	}
	// A bad key is refused before the body is read, with what is allowed.
	for _, bad := range []string{`""`, `"unterminated`, `a,b`, `a;b`, `two words`, strings.Repeat("k", 256), `"` + strings.Repeat("k", 256) + `"`, "\"tab\there\""} {
		eb := mustError(t, keyedCreate(t, env, bad, `{"name":"never"}`), http.StatusBadRequest, codeInvalidParameter)
		if !strings.Contains(eb.Message, "1 to 255 visible ASCII characters") || !strings.Contains(eb.Message, "UUID") {
			t.Errorf("Idempotency-Key %q: message %q does not say what a key may be", bad, eb.Message)
		}
	}
	if n := len(env.mustList(t)); n != 5 {
		t.Errorf("categories: got %d, want 5 (dog, cat, rabbit, hamster, ferret)", n)
	}
}

// A key whose create is in a group-commit batch still being written is in
// use: 409 with Retry-After, and nothing is created twice.
func TestIdempotencyKeyInUse(t *testing.T) {
	t.Parallel()
	hold := storetest.NewHold(t)
	s := openTestStore(t, filepath.Join(t.TempDir(), "cats.jsonl"), func(o *store.Options) { o.OnBatch = hold.OnBatch })
	env := newTestEnv(t, withStore(s))
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() { answered <- keyedCreate(t, env, `"held"`, `{"name":"dog"}`) }()
	if n := hold.NextBatch(t); n != 1 {
		t.Fatalf("first batch: %d creates, want 1", n)
	}
	rec := keyedCreate(t, env, `"held"`, `{"name":"dog"}`)
	mustError(t, rec, http.StatusConflict, codeIdempotencyKeyInUse)
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After: got %q, want 1", got)
	}
	hold.Release()
	if first := <-answered; first.Code != http.StatusCreated {
		t.Fatalf("the held create: got %d %s", first.Code, first.Body)
	}
	if rec := keyedCreate(t, env, `"held"`, `{"name":"dog"}`); rec.Code != http.StatusCreated || rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("after the held create: got %d, replayed %q; want a replay", rec.Code, rec.Header().Get("Idempotent-Replayed"))
	}
}

// Many concurrent creates with one key: exactly one category; every answer
// is that create, a replay of it, or 409 in use.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	t.Parallel()
	inMemoryAndJournaled(t, func(t *testing.T, env *testEnv) {
		const clients = 32
		answers := make(chan *httptest.ResponseRecorder, clients)
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers <- keyedCreate(t, env, `"race"`, `{"name":"racer"}`)
			}()
		}
		wg.Wait()
		close(answers)
		fresh, replays, inUse := 0, 0, 0
		for rec := range answers {
			switch {
			case rec.Code == http.StatusCreated && rec.Header().Get("Idempotent-Replayed") == "":
				fresh++
			case rec.Code == http.StatusCreated:
				replays++
			default:
				mustError(t, rec, http.StatusConflict, codeIdempotencyKeyInUse)
				inUse++
			}
		}
		if fresh != 1 || fresh+replays+inUse != clients {
			t.Errorf("%d fresh 201s, %d replays, %d in use; want exactly one fresh", fresh, replays, inUse)
		}
		if n := len(env.mustList(t)); n != 1 {
			t.Errorf("categories: got %d, want 1", n)
		}
	})
}

// Keys expire PETSTORE_IDEMPOTENCY_TTL after their create (an injected
// clock), in memory and on replay of the journal.
func TestIdempotencyKeysExpire(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	withClock := func(o *store.Options) { o.Now, o.IdempotencyTTL = clock.Now, time.Hour }
	s := openTestStore(t, path, withClock)
	env := newTestEnv(t, withStore(s))
	for _, k := range []string{"early", "late"} {
		if rec := keyedCreate(t, env, k, `{"name":"`+k+`"}`); rec.Code != http.StatusCreated {
			t.Fatalf("create %s: got %d", k, rec.Code)
		}
		clock.Advance(30 * time.Minute)
	}
	// 60 min after "early", 30 after "late".
	if rec := keyedCreate(t, env, "early", `{"name":"other"}`); rec.Code != http.StatusCreated {
		t.Errorf("an expired key with another request: got %d %s, want a new 201", rec.Code, rec.Body)
	}
	mustError(t, keyedCreate(t, env, "late", `{"name":"other 2"}`), http.StatusUnprocessableEntity, codeIdempotencyKeyReused)
	s.Close()

	// On replay: "late" (now 30 min old) is loaded, "early"'s first
	// record is not; its second create (just made) is.
	s2 := openTestStore(t, path, withClock)
	env2 := newTestEnv(t, withStore(s2))
	if rec := keyedCreate(t, env2, "late", `{"name":"late"}`); rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("a live key after a restart: got %d, replayed %q; want a replay", rec.Code, rec.Header().Get("Idempotent-Replayed"))
	}
	if rec := keyedCreate(t, env2, "early", `{"name":"other"}`); rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("the re-used key after a restart: got %d, want a replay of its second create", rec.Code)
	}
}

// A key lives at least the TTL from its create, also when the create is
// made within a second and the journal keeps whole seconds: before and
// after a restart, a retry just before the TTL is over replays, and one
// after the TTL and the rest of that second is a new create.
func TestIdempotencyKeyLivesTheTTL(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{time.Hour, 500 * time.Millisecond} {
		t.Run(ttl.String(), func(t *testing.T) {
			t.Parallel()
			clock := testkit.NewClock()
			clock.Advance(700 * time.Millisecond)
			path := filepath.Join(t.TempDir(), "cats.jsonl")
			withClock := func(o *store.Options) { o.Now, o.IdempotencyTTL = clock.Now, ttl }
			env := newTestEnv(t, withStore(openTestStore(t, path, withClock)))
			if rec := keyedCreate(t, env, "k", `{"name":"dog"}`); rec.Code != http.StatusCreated {
				t.Fatalf("create: got %d %s", rec.Code, rec.Body)
			}
			retry := func(env *testEnv, when string, wantReplay bool) {
				t.Helper()
				rec := keyedCreate(t, env, "k", `{"name":"dog"}`)
				if replayed := rec.Header().Get("Idempotent-Replayed") == "true"; replayed != wantReplay || wantReplay && rec.Code != http.StatusCreated {
					t.Errorf("retry %s: got %d, replayed %v; want replayed %v", when, rec.Code, replayed, wantReplay)
				}
			}
			clock.Advance(ttl - time.Nanosecond)
			retry(env, "just before the TTL", true)
			env.store.Close()
			env = newTestEnv(t, withStore(openTestStore(t, path, withClock)))
			retry(env, "just before the TTL, after a restart", true)
			clock.Advance(300*time.Millisecond + time.Nanosecond) // the TTL after the next whole second
			env.store.Close()
			env = newTestEnv(t, withStore(openTestStore(t, path, withClock)))
			// The key expired: the retry makes a create, refused as a
			// conflict since the category stays.
			mustError(t, keyedCreate(t, env, "k", `{"name":"dog"}`), http.StatusConflict, codeConflict)
		})
	}
}

// The journal format: a version-1 or version-2 file starts and is rewritten
// to version 3; version-2 records with a key are read (their keys, scoped
// by the API key's fingerprint, lapse: see catalog.KeyID);
// a keyed create's record is written in the short version-3 form and its
// key replays after a restart; a newer version is refused with a message
// that says so.
func TestJournalFormatVersions(t *testing.T) {
	t.Parallel()
	// The version-2 record's key as petstore wrote it then: scoped by the
	// API key's 8-hex fingerprint.
	legacy := sha256.Sum256([]byte(accesslog.Fingerprint(sha256.Sum256([]byte(testKey))) + "\x00old-key"))
	fp := sha256.Sum256([]byte("bird")) // the request fingerprint of {"name":"bird"}, as that version wrote it
	v2Record := `{"id":2,"name":"bird","idempotency":{"id":"` + hex.EncodeToString(legacy[:16]) + `","request":"` +
		hex.EncodeToString(fp[:16]) + `","at":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `}}`
	for _, tc := range []struct{ name, content string }{
		{"version 1", `{"format":"petstore-categories","version":1}` + "\n" + `{"id":1,"name":"dog"}` + "\n"},
		{"version 2", `{"format":"petstore-categories","version":2}` + "\n" + `{"id":1,"name":"dog"}` + "\n" + v2Record + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cats.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			env := newTestEnv(t, withStore(openTestStore(t, path)))
			const body = `{"name":" cat ","description":"meow"}`
			rec := keyedCreate(t, env, "k", body)
			if rec.Code != http.StatusCreated {
				t.Fatalf("create: got %d %s, want 201", rec.Code, rec.Body)
			}
			catID := rec.Header().Get("Location")
			env.store.Close()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			_, records, _ := strings.Cut(tc.content, "\n")
			if lines[0] != journalHeader || !strings.HasPrefix(string(data), journalHeader+"\n"+records) {
				t.Errorf("after a start: got %q, want the header at version 3 over the same records", data)
			}
			last := lines[len(lines)-1]
			if !regexp.MustCompile(`^\{"id":\d+,"name":"cat","description":"meow","idempotency":\["[A-Za-z0-9_-]{22}",\d{10}\]\}$`).MatchString(last) {
				t.Errorf("a keyed create's record: got %s, want the version-3 form", last)
			}

			// After a restart, the key replays and knows its request, from
			// the category on its line.
			env = newTestEnv(t, withStore(openTestStore(t, path)))
			if rec := keyedCreate(t, env, "k", body); rec.Code != http.StatusCreated ||
				rec.Header().Get("Idempotent-Replayed") != "true" || rec.Header().Get("Location") != catID {
				t.Errorf("retry of the version-3 record's key: got %d %v %s, want a replay of %s", rec.Code, rec.Header(), rec.Body, catID)
			}
			for _, other := range []string{`{"name":"cat"}`, `{"name":"cat","description":"purr"}`} {
				mustError(t, keyedCreate(t, env, "k", other), http.StatusUnprocessableEntity, codeIdempotencyKeyReused)
			}
			if strings.Contains(tc.content, "idempotency") {
				// A key scoped by the fingerprint is read, but no longer
				// names a create: its retry is processed afresh, and the
				// name it made is taken.
				mustError(t, keyedCreate(t, env, "old-key", `{"name":"bird"}`), http.StatusConflict, codeConflict)
			}
			if got := env.mustList(t); len(got) != len(lines)-1 {
				t.Errorf("list after the retries: got %+v, want %d categories", got, len(lines)-1)
			}
		})
	}

	newer := filepath.Join(t.TempDir(), "newer.jsonl")
	if err := os.WriteFile(newer, []byte(journal.Header(5)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore(newer, store.EtcdConfig{}, store.Options{}); err == nil || !strings.Contains(err.Error(), "version 5 is not supported by this petstore, which reads versions 1 to 4") {
		t.Errorf("a version-5 file: got %v", err)
	}
}
