package main

import (
	"net/http"
	"strconv"
	"sync/atomic"

	"petstore/internal/bodybudget"
	"petstore/internal/catalog"
	"petstore/internal/idemkey"

	"petstore/internal/textcut"
)

// handleCategoryList handles "GET /v1/categories": every category, sorted
// by id, served from the store's encoded snapshot, with an ETag; with a
// query, a page or a look-up by name (docs/api.md, "Pages and look-up by
// name").
func handleCategoryList(store Store) http.Handler {
	// The header values of the latest snapshot, made once per snapshot:
	// net/http takes header values as slices, and a list must not cost an
	// allocation for each.
	type listHeaders struct {
		snap         *catalog.Snapshot
		etag, length []string
	}
	var latest atomic.Pointer[listHeaders]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap, err := store.List(r.Context())
		if err != nil {
			writeError(w, r, err)
			return
		}
		if r.URL.RawQuery != "" {
			servePage(w, r, snap)
			return
		}
		lh := latest.Load()
		if lh == nil || lh.snap != snap {
			lh = &listHeaders{snap: snap, etag: []string{snap.ETag()}, length: []string{strconv.Itoa(snap.Size())}}
			latest.Store(lh)
		}
		if answeredNotModified(w, r, lh.etag, listCacheControl) {
			return
		}
		h := w.Header()
		h["Content-Type"] = jsonContentType
		h["Content-Length"] = lh.length
		w.WriteHeader(http.StatusOK)
		snap.WriteTo(w)
	})
}

var errBadIdempotencyKey = apiErrorf(codeInvalidParameter,
	`Idempotency-Key must be sent once, as 1 to %d visible ASCII characters other than '"', ',' and ';' (a UUID, say), or as a structured-field string ("…") of 1 to %[1]d printable ASCII characters`, idemkey.MaxLen)

// handleCategoryCreate handles "POST /v1/categories".
// With an Idempotency-Key (docs/api.md, "Safe retries"), a retry of a
// create that answered 201 gets the same answer again, marked
// Idempotent-Replayed: the key is stored with the category, in the same
// durable write, and expires PETSTORE_IDEMPOTENCY_TTL after the create
// (see Store.Create).
func handleCategoryCreate(store Store, bodies *bodybudget.Budget) http.Handler {
	replayed := []string{"true"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := idemkey.Parse(r.Header["Idempotency-Key"])
		if !ok {
			writeError(w, r, errBadIdempotencyKey)
			return
		}
		var held bodybudget.Hold
		members, err := decodeJSONObject(w, r, bodies, &held)
		if err != nil {
			bodies.Release(&held)
			writeError(w, r, err)
			return
		}
		nc, err := parseNewCategory(members) // copies what it keeps
		bodies.Release(&held)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if key != "" {
			// Scoped to the API key that sent it: another client's key
			// of the same text is another key.
			nc.Key = catalog.NewIdempotencyKey(factsOf(r).key, key)
		}
		c, err := store.Create(r.Context(), nc)
		if err != nil {
			writeError(w, r, err)
			return
		}
		var buf [40]byte
		w.Header()["Location"] = []string{string(strconv.AppendInt(append(buf[:0], "/v1/categories/"...), c.ID, 10))}
		if c.Replayed {
			w.Header()["Idempotent-Replayed"] = replayed
		}
		writeJSON(w, http.StatusCreated, c.JSON)
	})
}

// handleCategoryGet handles "GET /v1/categories/{id}".
func handleCategoryGet(store Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.PathValue("id")
		id, ok := catalog.ParseID(raw)
		if !ok {
			writeError(w, r, apiErrorf(codeInvalidParameter, "id must be a positive decimal integer such as 1 (no sign, no leading zeros), got %q", textcut.ShowControls(textcut.Truncate(raw, 40))))
			return
		}
		body, err := store.Get(r.Context(), id)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, body)
	})
}

// handleNotImplemented answers 501 for the operations that the specification
// names without giving their shape.
func handleNotImplemented(operation string) http.Handler {
	err := apiErrorf(codeNotImplemented, "%s is named by the specification, but its shape is not published; it is not implemented", operation)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, err)
	})
}

// handleLive handles "GET /livez", the liveness probe: 200 while the
// process serves requests, whatever its store's state (docs/operations.md,
// "Readiness and draining"). A probe that restarts the process must not
// restart every instance of a cluster when etcd loses its quorum.
func handleLive() http.Handler {
	ok := []byte(`{"status":"ok"}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, ok)
	})
}

// handleHealth handles "GET /healthz", for monitoring: it fails while the
// store cannot take creates (a journal that failed, etcd without quorum).
func handleHealth(store Store) http.Handler {
	ok := []byte(`{"status":"ok"}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := store.Health(); err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, ok)
	})
}
