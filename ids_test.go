package main

import (
	"net/http"
	"strings"
	"testing"

	"petstore/internal/catalog"
	"petstore/internal/store"
)

// A create that finds no id left answers 500 without a Location, and the
// reason goes to the log (the stores' half is tested in internal/store).
func TestIDsExhaustedAnswers500(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, withStore(failingStore{Store: store.NewMemory(store.Options{}), err: catalog.ErrIDsExhausted}))
	for _, name := range []string{"dog", "cat"} {
		rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"` + name + `"}`})
		mustError(t, rec, http.StatusInternalServerError, codeInternal)
		if loc := rec.Header().Get("Location"); loc != "" {
			t.Errorf("a failed create has a Location: %s", loc)
		}
	}
	if !strings.Contains(env.logs.String(), "no id left") {
		t.Errorf("the reason is not in the log: %s", env.logs)
	}
}
