package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/petstoretest"
)

// collidingJournal holds names equal under this build's simple case folding,
// as a build with newer Unicode tables can find names that an older one
// told apart (ɤ U+0264 and its capital U+A7CB, from Unicode 16): Dog and
// dog, and ǅ (U+01C5) and ǆ (U+01C6). ɤ and U+A7CB are kept as written.
var collidingJournal = []string{
	`{"id":1,"name":"Dog"}`,
	`{"id":2,"name":"dog"}`,
	`{"id":3,"name":"ǅ"}`,
	`{"id":5,"name":"ǆ"}`,
	`{"id":6,"name":"\u0264"}`,
	`{"id":7,"name":"\ua7cb"}`,
}

// A replay keeps both of two names that collide under this build's case
// folding, warns naming both lines, and refuses a new create of either.
func TestReplayKeepsCollidingNames(t *testing.T) {
	t.Parallel()
	path := writeJournal(t, collidingJournal...)
	var logs lockedBuffer
	s := openTestStore(t, path, withStoreLog(&logs))

	var warnings []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["level"] == "WARN" {
			warnings = append(warnings, l)
		}
	}
	want := []map[string]string{
		{"line": path + ":3", "name": `"dog"`, "earlier_line": path + ":2", "earlier_name": `"Dog"`},
		{"line": path + ":5", "name": `"ǆ"`, "earlier_line": path + ":4", "earlier_name": `"ǅ"`},
	}
	if len(warnings) != len(want) {
		t.Fatalf("got %d warnings, want %d; logs:\n%s", len(warnings), len(want), &logs)
	}
	for i, w := range want {
		for k, v := range w {
			if warnings[i][k] != v {
				t.Errorf("warning %d: %s is %v, want %s", i, k, warnings[i][k], v)
			}
		}
	}

	env := newTestEnv(t, withStore(s))
	if got := len(env.mustList(t)); got != len(collidingJournal) {
		t.Errorf("list: got %d categories, want %d", got, len(collidingJournal))
	}
	for _, id := range []int{1, 2, 3, 5, 6, 7} {
		if rec := env.do(t, request{method: "GET", path: "/v1/categories/" + strconv.Itoa(id)}); rec.Code != http.StatusOK {
			t.Errorf("GET %d: got %d, want 200", id, rec.Code)
		}
	}
	for _, name := range []string{"DOG", "dog", "Ǆ", "ǆ", "\u0264"} {
		body, _ := json.Marshal(map[string]string{"name": name})
		mustError(t, env.do(t, request{method: "POST", path: "/v1/categories", body: string(body)}), http.StatusConflict, codeConflict)
	}
	// A name this build's tables leave unassigned is kept from the file
	// but cannot be created anew: the name rules refuse it first.
	if !assignedInBuild('\ua7cb') {
		body, _ := json.Marshal(map[string]string{"name": "\ua7cb"})
		mustError(t, env.do(t, request{method: "POST", path: "/v1/categories", body: string(body)}), http.StatusBadRequest, codeInvalidField)
	}
	if c := env.mustCreate(t, "cat"); c.ID != 8 {
		t.Errorf("next id: got %d, want 8", c.ID)
	}
}

// The binary starts on such a file, with the warning on stderr.
func TestBinaryStartsWithCollidingNames(t *testing.T) {
	t.Parallel()
	path := writeJournal(t, collidingJournal...)
	p := petstoretest.Start(t, map[string]string{"PETSTORE_DATA": path})
	warning := p.WaitLog(5*time.Second, func(l petstoretest.LogLine) bool {
		return l["level"] == "WARN" && l["line"] == path+":3" && l["earlier_line"] == path+":2"
	})
	if warning == nil {
		t.Fatalf("no collision warning on stderr:\n%s", petstoretest.Redact(p.Stderr.String()))
	}
	resp, body := petstoretest.Send(t, petstoretest.NewClient(t), "GET", p.URL("/v1/categories"), petstoretest.Key, "", nil)
	petstoretest.WantStatus(t, "list", resp, body, http.StatusOK)
	var list []petstoretest.Category
	if err := json.Unmarshal(body, &list); err != nil || len(list) != len(collidingJournal) {
		t.Errorf("list: got %d categories (%v), want %d", len(list), err, len(collidingJournal))
	}
	p.Stop(t)
}
