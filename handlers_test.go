package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/bodybudget"
	"petstore/internal/petstoretest"
)

// These tests drive the real handler (routes + newHandler) through
// httptest and check it against docs/api.md: every error row, the success
// shapes, caching. Auth, the middleware and the configuration have files of
// their own (auth_test.go, middleware_test.go, config_test.go).

func TestCreateCategoryInvalidJSON(t *testing.T) {
	t.Parallel()
	syntaxErr := `{"name": }`
	trailingComma := `{"name":"a",}`
	tests := []struct {
		name    string
		body    string
		mention []string
	}{
		{"syntax error", syntaxErr, []string{"byte " + strconv.FormatInt(syntaxOffset(t, syntaxErr), 10)}},
		{"trailing comma", trailingComma, []string{"byte " + strconv.FormatInt(syntaxOffset(t, trailingComma), 10)}},
		{"truncated object", `{"name":"a"`, nil},
		{"empty body", "", []string{"empty"}},
		{"whitespace-only body", " \t\r\n ", []string{"empty"}},
		{"array body", `[{"name":"a"}]`, []string{"object", "array"}},
		{"string body", `"dog"`, []string{"object", "string"}},
		{"number body", `42`, []string{"object", "number"}},
		{"null body", `null`, []string{"object", "null"}},
		{"trailing object", `{"name":"a"} {}`, []string{"after"}},
		{"trailing garbage", `{"name":"a"}x`, []string{"after"}},
		{"invalid UTF-8", "{\"name\":\"a\xffb\"}", []string{"UTF-8"}},
		{"invalid UTF-8 in member name", "{\"name\":\"a\",\"\xfe\":1}", []string{"UTF-8"}},
		{"duplicate member", `{"name":"a","name":"b"}`, []string{`"name"`}},
		{"duplicate member by escape", `{"name":"a","n\u0061me":"b"}`, []string{`"name"`}},
		{"duplicate description", `{"name":"a","description":"x","description":"y"}`, []string{`"description"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t)
			eb := mustError(t, postCategory(t, env, tt.body), http.StatusBadRequest, codeInvalidJSON)
			mustMention(t, eb.Message, tt.mention...)
			if got := env.mustList(t); len(got) != 0 {
				t.Errorf("store after a rejected create: got %d categories, want 0", len(got))
			}
		})
	}
}

func TestCreateCategoryValidation(t *testing.T) {
	t.Parallel()
	const space = "  \t "
	tests := []struct {
		name     string
		body     string
		status   int      // 201, or 400 with code
		code     string   // for 400
		mention  []string // for 400: every one must be in the message
		wantName string   // for 201
	}{
		// missing_field
		{name: "name absent", body: `{}`, status: 400, code: codeMissingField, mention: []string{"name"}},
		{name: "name absent, description present", body: `{"description":"d"}`, status: 400, code: codeMissingField, mention: []string{"name"}},
		{name: "name null", body: `{"name":null}`, status: 400, code: codeMissingField, mention: []string{"name"}},

		// invalid_field: types
		{name: "name number", body: `{"name":5}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name bool", body: `{"name":true}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name object", body: `{"name":{"a":"b"}}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name array", body: `{"name":["dog"]}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "description number", body: `{"name":"dog","description":5}`, status: 400, code: codeInvalidField, mention: []string{"description"}},
		{name: "description bool", body: `{"name":"dog","description":false}`, status: 400, code: codeInvalidField, mention: []string{"description"}},
		{name: "description null", body: `{"name":"dog","description":null}`, status: 400, code: codeInvalidField, mention: []string{"description"}},
		{name: "description object", body: `{"name":"dog","description":{}}`, status: 400, code: codeInvalidField, mention: []string{"description"}},
		{name: "description array", body: `{"name":"dog","description":["x"]}`, status: 400, code: codeInvalidField, mention: []string{"description"}},

		// invalid_field: bounds on name
		{name: "name empty", body: `{"name":""}`, status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name whitespace only", body: nameBody(" \t\n "), status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name 100 é", body: nameBody(strings.Repeat("é", 100)), status: 201, wantName: strings.Repeat("é", 100)},
		{name: "name 101 é", body: nameBody(strings.Repeat("é", 101)), status: 400, code: codeInvalidField, mention: []string{"name", "100"}},
		{name: "name 100 日", body: nameBody(strings.Repeat("日", 100)), status: 201, wantName: strings.Repeat("日", 100)},
		{name: "name 101 日", body: nameBody(strings.Repeat("日", 101)), status: 400, code: codeInvalidField, mention: []string{"name", "100"}},
		{name: "name 100 emoji", body: nameBody(strings.Repeat("🐶", 100)), status: 201, wantName: strings.Repeat("🐶", 100)},
		{name: "name 100 日 within spaces", body: nameBody(space + strings.Repeat("日", 100) + space), status: 201, wantName: strings.Repeat("日", 100)},
		{name: "name 101 日 within spaces", body: nameBody(space + strings.Repeat("日", 101) + space), status: 400, code: codeInvalidField, mention: []string{"name"}},
		{name: "name 100 ASCII within spaces", body: nameBody(" " + strings.Repeat("a", 100) + " "), status: 201, wantName: strings.Repeat("a", 100)},
		{name: "name with BEL", body: `{"name":"a\u0007b"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},
		{name: "name with DEL", body: `{"name":"a\u007fb"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},
		{name: "name with NEL", body: `{"name":"a\u0085b"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},
		{name: "name with NUL", body: `{"name":"a\u0000b"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},
		{name: "name with inner newline", body: `{"name":"a\nb"}`, status: 400, code: codeInvalidField, mention: []string{"name", "control"}},

		// invalid_field: bounds on description
		{name: "description 1000 é", body: nameDescBody("dog", strings.Repeat("é", 1000)), status: 201, wantName: "dog"},
		{name: "description 1001 é", body: nameDescBody("dog", strings.Repeat("é", 1001)), status: 400, code: codeInvalidField, mention: []string{"description", "1000"}},
		{name: "description 1000 日", body: nameDescBody("dog", strings.Repeat("日", 1000)), status: 201, wantName: "dog"},
		{name: "description 1001 日", body: nameDescBody("dog", strings.Repeat("日", 1001)), status: 400, code: codeInvalidField, mention: []string{"description", "1000"}},

		// unknown_field
		{name: "NAME", body: `{"name":"dog","NAME":"cat"}`, status: 400, code: codeUnknownField, mention: []string{`"NAME"`}},
		{name: "Name instead of name", body: `{"Name":"dog"}`, status: 400, code: codeUnknownField, mention: []string{`"Name"`}},
		{name: "id", body: `{"name":"dog","id":7}`, status: 400, code: codeUnknownField, mention: []string{`"id"`}},
		{name: "extra", body: `{"name":"dog","extra":true}`, status: 400, code: codeUnknownField, mention: []string{`"extra"`}},

		// every problem in one answer
		{name: "NAME and bad description", body: `{"NAME":"dog","description":5}`, status: 400, code: codeUnknownField, mention: []string{`"NAME"`, "description"}},
		{name: "bad name, bad description, id", body: `{"name":5,"description":true,"id":1}`, status: 400, code: codeUnknownField, mention: []string{"name", "description", `"id"`}},
		{name: "long name and long description", body: nameDescBody(strings.Repeat("x", 101), strings.Repeat("y", 1001)), status: 400, code: codeInvalidField, mention: []string{"name", "description"}},
		{name: "missing name and bad description", body: `{"description":null}`, status: 400, code: codeMissingField, mention: []string{"name", "description"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t)
			rec := postCategory(t, env, tt.body)
			if tt.status != http.StatusCreated {
				eb := mustError(t, rec, tt.status, tt.code)
				mustMention(t, eb.Message, tt.mention...)
				if got := env.mustList(t); len(got) != 0 {
					t.Errorf("store after a rejected create: got %d categories, want 0", len(got))
				}
				return
			}
			mustStatus(t, rec, http.StatusCreated)
			c, _ := decodeCategory(t, rec.Body.Bytes())
			if c.Name != tt.wantName {
				t.Errorf("name: got %q, want %q", c.Name, tt.wantName)
			}
		})
	}
}

func TestGetCategoryInvalidParameter(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	for _, id := range []string{"0", "-1", "+1", "01", "1.0", "1e0", "abc", "0x1", "9223372036854775808", "99999999999999999999"} {
		t.Run(id, func(t *testing.T) {
			rec := env.do(t, request{method: "GET", path: "/v1/categories/" + id})
			eb := mustError(t, rec, http.StatusBadRequest, codeInvalidParameter)
			mustMention(t, eb.Message, "id")
		})
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	tests := []struct {
		name, method, path string
	}{
		{"unknown id", "GET", "/v1/categories/999"},
		{"largest int64 id", "GET", "/v1/categories/9223372036854775807"},
		{"unknown path", "GET", "/v1/nope"},
		{"unknown path, POST", "POST", "/v1/nope"},
		{"trailing slash", "GET", "/v1/categories/"},
		{"trailing slash after id", "GET", "/v1/categories/1/"},
		{"deeper path", "GET", "/v1/categories/1/pets"},
		{"root", "GET", "/"},
		{"base path", "GET", "/v1"},
		{"upper-case prefix", "GET", "/V1/categories"},
		{"double slash", "GET", "/v1//categories"},
		{"double slash alone", "GET", "//"},
		{"dot segment", "GET", "/v1/./categories"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := env.do(t, request{method: tt.method, path: tt.path})
			mustError(t, rec, http.StatusNotFound, codeNotFound)
			if loc := rec.Header().Get("Location"); loc != "" {
				t.Errorf("Location: got %q, want none (no redirects)", loc)
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	tests := []struct {
		method, path, allow string
	}{
		{"DELETE", "/v1/categories", "GET, HEAD, POST"},
		{"PUT", "/v1/categories", "GET, HEAD, POST"},
		{"PATCH", "/v1/categories", "GET, HEAD, POST"},
		{"POST", "/v1/categories/1", "GET, HEAD"},
		{"DELETE", "/v1/categories/1", "GET, HEAD"},
		{"POST", "/v1/store/orders", "GET, HEAD"},
		{"POST", "/v1/pets/1", "GET, HEAD"},
		{"POST", "/healthz", "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := env.do(t, request{method: tt.method, path: tt.path, body: `{"name":"cat"}`})
			mustError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed)
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow: got %q, want %q", got, tt.allow)
			}
		})
	}
	if got := env.mustList(t); len(got) != 1 {
		t.Errorf("after 405 answers: got %d categories, want 1", len(got))
	}
}

func TestCreateCategoryConflict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		first, second string
	}{
		{"dog", "dog"},
		{"dog", "DOG"},
		{"DOG", "dog"},
		{"dog", "  dog "},
		{" dog", "Dog\t"},
		{"école", "ÉCOLE"},
		{"ÉCOLE", "école"},
		{"日本", "日本"},
		// Simple case folding, as strings.EqualFold: final sigma folds
		// with Σ, which lower-casing alone would miss.
		{"ΟΔΟΣ", "οδος"},
	}
	for _, tt := range tests {
		t.Run(tt.first+" then "+tt.second, func(t *testing.T) {
			env := newTestEnv(t)
			first := env.mustCreate(t, tt.first)
			eb := mustError(t, postCategory(t, env, nameBody(tt.second)), http.StatusConflict, codeConflict)
			mustMention(t, eb.Message, strings.TrimSpace(tt.second), fmt.Sprintf("%q (id %d)", first.Name, first.ID))
			list := env.mustList(t)
			if len(list) != 1 || list[0] != first {
				t.Errorf("list after conflict: got %+v, want only %+v", list, first)
			}
		})
	}
}

func TestPayloadTooLarge(t *testing.T) {
	t.Parallel()
	// A valid JSON object padded with white space to the given size, so that
	// only the size can be at fault.
	padded := func(size int) string {
		obj := `{"name":"big"}`
		return obj + strings.Repeat(" ", size-len(obj))
	}
	newPost := func(body string, contentLength int64) *http.Request {
		r := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(body))
		r.ContentLength = contentLength
		r.Header.Set("Authorization", "Bearer "+testKey)
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	over, atLimit := padded(maxBodyBytes+1), padded(maxBodyBytes)
	if maxBodyBytes != 1<<20 {
		t.Fatalf("maxBodyBytes: got %d, want 1 MiB", maxBodyBytes)
	}
	tests := []struct {
		name   string
		req    *http.Request
		status int
	}{
		{"1 MiB + 1 byte, declared", newPost(over, int64(len(over))), http.StatusRequestEntityTooLarge},
		{"1 MiB + 1 byte, length unknown", newPost(over, -1), http.StatusRequestEntityTooLarge},
		{"declared length over 1 MiB, short body", newPost(`{"name":"big"}`, 2<<20), http.StatusRequestEntityTooLarge},
		{"exactly 1 MiB, declared", newPost(atLimit, int64(len(atLimit))), http.StatusCreated},
		{"exactly 1 MiB, length unknown", newPost(atLimit, -1), http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t)
			rec := env.serveRequest(t, tt.req)
			if tt.status != http.StatusCreated {
				eb := mustError(t, rec, tt.status, codePayloadTooLarge)
				mustMention(t, eb.Message, strconv.Itoa(maxBodyBytes))
				return
			}
			mustStatus(t, rec, http.StatusCreated)
			if c, _ := decodeCategory(t, rec.Body.Bytes()); c.Name != "big" {
				t.Errorf("name: got %q, want big", c.Name)
			}
		})
	}
}

func TestContentType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		contentType string // "" sends no Content-Type
		status      int
	}{
		{"text/plain", http.StatusUnsupportedMediaType},
		{"", http.StatusUnsupportedMediaType},
		{"application/xml", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"application/jsonx", http.StatusUnsupportedMediaType},
		{"application/json;", http.StatusCreated},
		{"application/json; charset=utf-8", http.StatusCreated},
		{"application/json;charset=UTF-8", http.StatusCreated},
		{"Application/JSON", http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.contentType), func(t *testing.T) {
			env := newTestEnv(t)
			header := map[string]string{"Authorization": "Bearer " + testKey}
			if tt.contentType != "" {
				header["Content-Type"] = tt.contentType
			}
			rec := env.do(t, request{method: "POST", path: "/v1/categories", body: `{"name":"dog"}`, header: header})
			if tt.status != http.StatusCreated {
				eb := mustError(t, rec, tt.status, codeUnsupportedMediaType)
				mustMention(t, eb.Message, "application/json")
				if got := env.mustList(t); len(got) != 0 {
					t.Errorf("store after 415: got %d categories, want 0", len(got))
				}
				return
			}
			mustStatus(t, rec, http.StatusCreated)
		})
	}
}

func TestPets(t *testing.T) {
	t.Parallel()
	const (
		wantDeprecation = "@1767225600" // 2026-01-01T00:00:00Z
		wantSunset      = "Fri, 01 Jan 2027 00:00:00 GMT"
	)
	tests := []struct {
		name   string
		now    time.Time
		status int
		code   string
	}{
		{"before sunset", beforePetsSunset, http.StatusNotImplemented, codeNotImplemented},
		{"after sunset", afterPetsSunset, http.StatusGone, codeGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, withNow(tt.now))
			rec := env.do(t, request{method: "GET", path: "/v1/pets/1"})
			mustError(t, rec, tt.status, tt.code)
			if got := rec.Header().Get("Deprecation"); got != wantDeprecation {
				t.Errorf("Deprecation: got %q, want %q", got, wantDeprecation)
			}
			if got := rec.Header().Get("Sunset"); got != wantSunset {
				t.Errorf("Sunset: got %q, want %q", got, wantSunset)
			}
		})
	}
}

func TestStoreOrdersNotImplemented(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for _, method := range []string{"GET", "HEAD"} {
		rec := env.do(t, request{method: method, path: "/v1/store/orders"})
		mustError(t, rec, http.StatusNotImplemented, codeNotImplemented)
	}
}

func TestListEmpty(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	rec := env.do(t, request{method: "GET", path: "/v1/categories"})
	mustStatus(t, rec, http.StatusOK)
	if got := rec.Body.String(); got != "[]" {
		t.Errorf("body: got %q, want []", got)
	}
}

func TestCreateCategory(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	ref := func(s string) *string { return &s }
	tests := []struct {
		name     string
		body     string
		wantName string
		wantDesc *string // nil: the member must be absent
	}{
		{"name only", `{"name":"dog"}`, "dog", nil},
		{"name trimmed", `{"name":"  \t cat \n"}`, "cat", nil},
		{"with description", `{"name":"rabbit","description":"long ears"}`, "rabbit", ref("long ears")},
		{"description first", `{"description":"scales","name":"fish"}`, "fish", ref("scales")},
		{"empty description", `{"name":"bird","description":""}`, "bird", ref("")},
		{"non-ASCII", `{"name":"  Chat  ","description":"félin, 猫"}`, "Chat", ref("félin, 猫")},
	}
	var lastID int64
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := postCategory(t, env, tt.body)
			mustStatus(t, rec, http.StatusCreated)
			c, members := decodeCategory(t, rec.Body.Bytes())
			if i == 0 && c.ID != 1 {
				t.Errorf("first id: got %d, want 1", c.ID)
			}
			if c.ID <= lastID {
				t.Errorf("id: got %d, want more than the previous %d", c.ID, lastID)
			}
			lastID = c.ID
			if c.Name != tt.wantName {
				t.Errorf("name: got %q, want %q", c.Name, tt.wantName)
			}
			if _, has := members["id"]; !has {
				t.Errorf("body has no id: %s", rec.Body)
			}
			_, hasDesc := members["description"]
			switch {
			case tt.wantDesc == nil && hasDesc:
				t.Errorf("description: got %s, want the member absent", members["description"])
			case tt.wantDesc != nil && (c.Description == nil || *c.Description != *tt.wantDesc):
				t.Errorf("description: got %s, want %q", members["description"], *tt.wantDesc)
			}
			if len(members) > 3 {
				t.Errorf("body has extra members: %s", rec.Body)
			}
			wantLocation := "/v1/categories/" + strconv.FormatInt(c.ID, 10)
			if got := rec.Header().Get("Location"); got != wantLocation {
				t.Errorf("Location: got %q, want %q", got, wantLocation)
			}

			// The category is there at its Location, byte for byte.
			got := env.do(t, request{method: "GET", path: wantLocation})
			mustStatus(t, got, http.StatusOK)
			if got.Body.String() != rec.Body.String() {
				t.Errorf("GET %s: got %s, want %s", wantLocation, got.Body, rec.Body)
			}
		})
	}
}

func TestIDsIncreaseAndListIsSorted(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	names := []string{"zebra", "ant", "mouse", "cat", "bee", "yak", "dog"}
	var created []petstoretest.Category
	for i, name := range names {
		c := env.mustCreate(t, name)
		if i == 0 && c.ID != 1 {
			t.Errorf("first id: got %d, want 1", c.ID)
		}
		if i > 0 && c.ID <= created[i-1].ID {
			t.Errorf("id of %q: got %d, want more than %d", name, c.ID, created[i-1].ID)
		}
		created = append(created, c)
		// Rejected creates in between must not disturb the sequence.
		mustError(t, postCategory(t, env, nameBody(strings.ToUpper(name))), http.StatusConflict, codeConflict)
		mustError(t, postCategory(t, env, `{"name":""}`), http.StatusBadRequest, codeInvalidField)
	}
	list := env.mustList(t)
	if !slices.Equal(list, created) {
		t.Errorf("list: got %+v, want %+v", list, created)
	}
	if !slices.IsSortedFunc(list, func(a, b petstoretest.Category) int { return int(a.ID - b.ID) }) {
		t.Errorf("list not sorted by id: %+v", list)
	}
	for _, c := range created {
		rec := env.do(t, request{method: "GET", path: "/v1/categories/" + strconv.FormatInt(c.ID, 10)})
		mustStatus(t, rec, http.StatusOK)
		if got, _ := decodeCategory(t, rec.Body.Bytes()); got != c {
			t.Errorf("GET id %d: got %+v, want %+v", c.ID, got, c)
		}
	}
}

// HEAD goes through a real server: net/http, not the handler, drops the
// body of a HEAD answer, and only a server shows what a client receives.
func TestHead(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	srv := httptest.NewServer(env.handler)
	defer srv.Close()

	send := func(t *testing.T, method, path string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	for _, path := range []string{"/v1/categories", "/v1/categories/1", "/healthz"} {
		t.Run(path, func(t *testing.T) {
			get, getBody := send(t, "GET", path)
			head, headBody := send(t, "HEAD", path)
			if head.StatusCode != http.StatusOK || get.StatusCode != http.StatusOK {
				t.Fatalf("status: got HEAD %d, GET %d, want 200", head.StatusCode, get.StatusCode)
			}
			if len(headBody) != 0 {
				t.Errorf("HEAD body: got %q, want empty", headBody)
			}
			if len(getBody) == 0 {
				t.Errorf("GET body is empty")
			}
			// Headers that differ per request by nature.
			for _, h := range []http.Header{get.Header, head.Header} {
				if h.Get("X-Request-Id") == "" {
					t.Errorf("no X-Request-Id")
				}
				h.Del("X-Request-Id")
				h.Del("Date")
			}
			if fmt.Sprint(head.Header) != fmt.Sprint(get.Header) {
				t.Errorf("headers: HEAD %v, GET %v, want the same", head.Header, get.Header)
			}
			if got, want := head.Header.Get("Content-Length"), strconv.Itoa(len(getBody)); got != want {
				t.Errorf("HEAD Content-Length: got %q, want %q", got, want)
			}
		})
	}
}

func TestListETag(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	list := func(ifNoneMatch string) *httptest.ResponseRecorder {
		t.Helper()
		header := authJSON()
		if ifNoneMatch != "" {
			header["If-None-Match"] = ifNoneMatch
		}
		return env.do(t, request{method: "GET", path: "/v1/categories", header: header})
	}

	first := list("")
	mustStatus(t, first, http.StatusOK)
	etag := first.Header().Get("ETag")
	if etag == "" || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) {
		t.Fatalf("ETag: got %q, want a quoted entity tag", etag)
	}
	if got := first.Header().Get("Cache-Control"); got != "private, no-cache" {
		t.Errorf("Cache-Control: got %q, want %q", got, "private, no-cache")
	}

	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		rec := list(inm)
		if rec.Code != http.StatusNotModified {
			t.Fatalf("If-None-Match %s: got %d, want 304; body %s", inm, rec.Code, rec.Body)
		}
		if rec.Body.Len() != 0 {
			t.Errorf("If-None-Match %s: 304 body: got %q, want empty", inm, rec.Body)
		}
		if got := rec.Header().Get("ETag"); got != etag {
			t.Errorf("If-None-Match %s: 304 ETag: got %q, want %q", inm, got, etag)
		}
	}
	if rec := list(`"something-else"`); rec.Code != http.StatusOK || rec.Body.String() != "[]" {
		t.Errorf("other ETag: got %d %s, want 200 []", rec.Code, rec.Body)
	}

	env.mustCreate(t, "dog")
	changed := list(etag)
	mustStatus(t, changed, http.StatusOK)
	newETag := changed.Header().Get("ETag")
	if newETag == "" || newETag == etag {
		t.Errorf("ETag after a create: got %q, want a new one (was %q)", newETag, etag)
	}
	var got []petstoretest.Category
	if err := json.Unmarshal(changed.Body.Bytes(), &got); err != nil || len(got) != 1 {
		t.Errorf("list after a create: got %s (%v), want one category", changed.Body, err)
	}
	if rec := list(newETag); rec.Code != http.StatusNotModified {
		t.Errorf("new ETag: got %d, want 304", rec.Code)
	}

	// A rejected create leaves the list, and so its ETag, as it was.
	mustError(t, postCategory(t, env, nameBody("DOG")), http.StatusConflict, codeConflict)
	if rec := list(newETag); rec.Code != http.StatusNotModified {
		t.Errorf("ETag after a rejected create: got %d, want 304", rec.Code)
	}
}

func TestJSONEscapingRoundTrip(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	names := []string{
		`say "hi"`,
		`back\slash`,
		`<script>alert(1)</script> & co`,
		"café 日本語 🐶 Ωmega",
		"line\u2028and\u2029para",
		`mixed "\<>&é/`,
		"tab\tinside",
	}
	want := make([]petstoretest.Category, 0, len(names))
	for _, name := range names {
		if strings.ContainsAny(name, "\t\u2028\u2029") {
			// A tab is a control character, U+2028 and U+2029 are
			// separators: rejected in a name, named in a valid JSON
			// message. A description may hold them.
			mustError(t, postCategory(t, env, nameBody(name)), http.StatusBadRequest, codeInvalidField)
			name = strings.NewReplacer("\t", " ", "\u2028", " ", "\u2029", " ").Replace(name)
		}
		desc := "about " + name + "\u2028\u2029"
		rec := postCategory(t, env, nameDescBody(name, desc))
		mustStatus(t, rec, http.StatusCreated)
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("create %q: body is not valid JSON: %s", name, rec.Body)
		}
		c, _ := decodeCategory(t, rec.Body.Bytes())
		if c.Name != name || c.Description == nil || *c.Description != desc {
			t.Errorf("create: got name %q description %v, want %q and %q", c.Name, c.Description, name, desc)
		}
		got := env.do(t, request{method: "GET", path: rec.Header().Get("Location")})
		mustStatus(t, got, http.StatusOK)
		if g, _ := decodeCategory(t, got.Body.Bytes()); g.Name != name {
			t.Errorf("get: got name %q, want %q", g.Name, name)
		}
		want = append(want, c)
	}
	list := env.mustList(t)
	if len(list) != len(want) {
		t.Fatalf("list: got %d categories, want %d", len(list), len(want))
	}
	for i := range list {
		if list[i].Name != want[i].Name || *list[i].Description != *want[i].Description {
			t.Errorf("list[%d]: got %q, want %q", i, list[i].Name, want[i].Name)
		}
	}

	// Names echoed in error messages are escaped too.
	eb := mustError(t, postCategory(t, env, nameBody(`SAY "HI"`)), http.StatusConflict, codeConflict)
	mustMention(t, eb.Message, strconv.Quote(`SAY "HI"`))
	eb = mustError(t, postCategory(t, env, `{"name":"x","<\"odd\\>":1}`), http.StatusBadRequest, codeUnknownField)
	mustMention(t, eb.Message, strconv.Quote(`<"odd\>`))
}

// A body shorter than its declared length is the client's mistake (400),
// and bodies over the first read size arrive whole.
func TestDeclaredBodyLength(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	short := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(`{"name":"dog"}`))
	short.ContentLength = 100
	short.Header.Set("Authorization", "Bearer "+testKey)
	short.Header.Set("Content-Type", "application/json")
	mustError(t, env.serveRequest(t, short), http.StatusBadRequest, codeInvalidJSON)

	desc := strings.Repeat("d", 1000)
	padding := strings.Repeat(" ", bodybudget.Block) // a body over one block, valid JSON
	body := `{"name":"cat",` + padding + `"description":"` + desc + `"}`
	long := httptest.NewRequest("POST", "/v1/categories", strings.NewReader(body))
	long.Header.Set("Authorization", "Bearer "+testKey)
	long.Header.Set("Content-Type", "application/json")
	rec := env.serveRequest(t, long)
	mustStatus(t, rec, http.StatusCreated)
	if c, _ := decodeCategory(t, rec.Body.Bytes()); c.Name != "cat" || c.Description == nil || *c.Description != desc {
		t.Errorf("created %+v from a %d-byte body", c, len(body))
	}
}
