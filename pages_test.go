package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"petstore/internal/petstoretest"
)

// getList sends an authorised GET of path and returns the answer.
func (e *testEnv) getList(t testing.TB, path string) *httptest.ResponseRecorder {
	t.Helper()
	return e.do(t, request{method: "GET", path: path})
}

// Walking the pages by their Link headers gives the whole list, byte for
// byte, for every page size; the last page has no Link.
func TestPagesConcatenateToTheWholeList(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for i := range 23 {
		env.mustCreate(t, fmt.Sprintf("cat-%02d", i))
	}
	whole := env.getList(t, "/v1/categories").Body.Bytes()
	var all []json.RawMessage
	if err := json.Unmarshal(whole, &all); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 5, 22, 23, 24, 1000} {
		var got []json.RawMessage
		pages := 0
		for next := fmt.Sprintf("/v1/categories?limit=%d", limit); next != ""; pages++ {
			rec := env.getList(t, next)
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: got %d, want 200; body %s", next, rec.Code, rec.Body)
			}
			var page []json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
				t.Fatalf("%s: %v; body %s", next, err, rec.Body)
			}
			if len(page) > limit {
				t.Errorf("%s: %d categories, more than the limit", next, len(page))
			}
			if got, want := rec.Header().Get("Content-Length"), fmt.Sprint(rec.Body.Len()); got != want {
				t.Errorf("%s: Content-Length %s, body %s bytes", next, got, want)
			}
			got = append(got, page...)
			next = nextLink(t, rec.Header())
		}
		if want := (len(all) + limit - 1) / limit; pages != want {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
		}
		joined, _ := json.Marshal(got)
		if !bytes.Equal(joined, whole) {
			t.Errorf("limit %d: pages joined give %s, want %s", limit, joined, whole)
		}
	}
}

var linkFormat = regexp.MustCompile(`^</v1/categories\?limit=([0-9]+)&after=([0-9]+)>; rel="next"$`)

// nextLink returns the target of a Link rel="next" header, checking its
// exact format, or "" without one.
func nextLink(t testing.TB, h http.Header) string {
	t.Helper()
	links := h.Values("Link")
	if len(links) == 0 {
		return ""
	}
	if len(links) != 1 || !linkFormat.MatchString(links[0]) {
		t.Fatalf("Link: got %q, want one </v1/categories?limit=N&after=LAST>; rel=\"next\"", links)
	}
	return strings.TrimPrefix(strings.SplitN(links[0], ">", 2)[0], "<")
}

// The Link header is exactly the contract's, and after without limit
// answers everything after the id.
func TestPageLinkAndAfter(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for _, n := range []string{"a", "b", "c", "d"} {
		env.mustCreate(t, n)
	}
	cases := []struct {
		path, link, body string
	}{
		{"/v1/categories?limit=2", `</v1/categories?limit=2&after=2>; rel="next"`, `[{"id":1,"name":"a"},{"id":2,"name":"b"}]`},
		{"/v1/categories?after=1&limit=2", `</v1/categories?limit=2&after=3>; rel="next"`, `[{"id":2,"name":"b"},{"id":3,"name":"c"}]`},
		{"/v1/categories?limit=2&after=2", "", `[{"id":3,"name":"c"},{"id":4,"name":"d"}]`},
		{"/v1/categories?after=2", "", `[{"id":3,"name":"c"},{"id":4,"name":"d"}]`},
		{"/v1/categories?after=0", "", `[{"id":1,"name":"a"},{"id":2,"name":"b"},{"id":3,"name":"c"},{"id":4,"name":"d"}]`},
		{"/v1/categories?after=4", "", `[]`},
		{"/v1/categories?after=9223372036854775807&limit=1000", "", `[]`},
	}
	for _, c := range cases {
		rec := env.getList(t, c.path)
		if rec.Code != http.StatusOK || rec.Body.String() != c.body {
			t.Errorf("%s: got %d %s, want 200 %s", c.path, rec.Code, rec.Body, c.body)
		}
		if got := rec.Header().Get("Link"); got != c.link {
			t.Errorf("%s: Link %q, want %q", c.path, got, c.link)
		}
		if got := rec.Header().Get("Content-Type"); got != "application/json" {
			t.Errorf("%s: Content-Type %q", c.path, got)
		}
	}
}

// Every bad query parameter of the list is 400 invalid_parameter naming it.
func TestBadQueryParameters(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	list := []struct{ query, names string }{
		{"limt=10", "limt"},
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=01", "limit"},
		{"limit=+1", "limit"},
		{"limit=-1", "limit"},
		{"limit=1.0", "limit"},
		{"limit=", "limit"},
		{"limit", "limit"},
		{"limit=10&limit=10", "limit"},
		{"after=-1", "after"},
		{"after=00", "after"},
		{"after=9223372036854775808", "after"},
		{"after=x", "after"},
		{"after=", "after"},
		{"name=", "name"},
		{"name=%20%20", "name"},
		{"name=dog&name=cat", "name"},
		{"name=dog&limit=1", "name"},
		{"after=1&name=dog", "name"},
		{"name=%zz", "name"},
		{"name=%ff", "name"},
		{"limit=1&", "&"},
		{"&limit=1", "&"},
		{"LIMIT=1", "LIMIT"},
		{"%zz=1", "%zz"},
	}
	for _, c := range list {
		rec := env.getList(t, "/v1/categories?"+c.query)
		eb := mustError(t, rec, http.StatusBadRequest, codeInvalidParameter)
		if !strings.Contains(eb.Message, c.names) {
			t.Errorf("?%s: message %q does not name %s", c.query, eb.Message, c.names)
		}
	}
}

// Every other operation defines no query parameter: any query is 400, on
// public operations too, and nothing is created; routing and the key come
// first.
func TestQueryOnOtherOperations(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "dog")
	public := map[string]string{"Authorization": ""}
	for _, c := range []request{
		{method: "POST", path: "/v1/categories?x=1", body: `{"name":"cat"}`},
		{method: "GET", path: "/v1/categories/1?limit=1"},
		{method: "GET", path: "/v1/pets/1?a=b"},
		{method: "GET", path: "/v1/store/orders?limit=1"},
		{method: "GET", path: "/metrics?name[]=x"},
		{method: "GET", path: "/v1/openapi.json?v=1", header: public},
		{method: "HEAD", path: "/healthz?probe", header: public},
	} {
		rec := env.do(t, c)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s %s: got %d, want 400; body %s", c.method, c.path, rec.Code, rec.Body)
		}
	}
	if got := len(env.mustList(t)); got != 1 {
		t.Errorf("a create with a bad query stored a category: %d categories", got)
	}
	// Routing, then the key, come before the query.
	for _, c := range []struct {
		req  request
		want int
	}{
		{request{method: "GET", path: "/v1/nowhere?limit=0"}, http.StatusNotFound},
		{request{method: "DELETE", path: "/v1/categories?limit=0"}, http.StatusMethodNotAllowed},
		{request{method: "GET", path: "/v1/categories?limit=0", header: public}, http.StatusUnauthorized},
		{request{method: "GET", path: "/v1/store/orders?x", header: public}, http.StatusUnauthorized},
	} {
		if rec := env.do(t, c.req); rec.Code != c.want {
			t.Errorf("%s %s: got %d, want %d", c.req.method, c.req.path, rec.Code, c.want)
		}
	}
}

// A page's ETag answers If-None-Match with 304 while the catalogue does not
// change, differs between pages, and changes when the catalogue does.
func TestPageETag(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "a")
	env.mustCreate(t, "b")
	paths := []string{"/v1/categories", "/v1/categories?limit=1", "/v1/categories?limit=1&after=1", "/v1/categories?after=1", "/v1/categories?name=a", "/v1/categories?name=b"}
	tags := map[string]string{}
	seen := map[string]string{}
	for _, p := range paths {
		tag := env.getList(t, p).Header().Get("ETag")
		if other, dup := seen[tag]; dup || tag == "" {
			t.Errorf("%s: ETag %q, the same as %s's", p, tag, other)
		}
		seen[tag], tags[p] = p, tag
		rec := env.do(t, request{method: "GET", path: p, header: map[string]string{"Authorization": "Bearer " + testKey, "If-None-Match": tag}})
		if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("%s with its ETag: got %d %q, want 304 and no body", p, rec.Code, rec.Body)
		}
	}
	env.mustCreate(t, "c")
	for _, p := range paths {
		tag := env.getList(t, p).Header().Get("ETag")
		if tag == tags[p] {
			t.Errorf("%s: ETag %s did not change with the catalogue", p, tag)
		}
		rec := env.do(t, request{method: "GET", path: p, header: map[string]string{"Authorization": "Bearer " + testKey, "If-None-Match": tags[p]}})
		if rec.Code != http.StatusOK {
			t.Errorf("%s with the old ETag: got %d, want 200", p, rec.Code)
		}
	}
}

// name= finds the category under the uniqueness rule: trimmed, case and
// fullwidth forms folded; an array of one or none.
func TestListByName(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	env.mustCreate(t, "Dog")
	env.mustCreate(t, "Straße")
	env.mustCreate(t, "cat")
	for query, want := range map[string]string{
		"name=Dog":                         `[{"id":1,"name":"Dog"}]`,
		"name=dOG":                         `[{"id":1,"name":"Dog"}]`,
		"name=+dog+":                       `[{"id":1,"name":"Dog"}]`,
		"name=%20DOG%09":                   `[{"id":1,"name":"Dog"}]`,
		"name=%EF%BC%A4%EF%BD%8F%EF%BD%87": `[{"id":1,"name":"Dog"}]`, // ＤＯＧ in fullwidth
		"name=STRASSE":                     `[]`,
		"name=stra%C3%9Fe":                 `[{"id":2,"name":"Straße"}]`,
		"name=CAT":                         `[{"id":3,"name":"cat"}]`,
		"name=cats":                        `[]`,
	} {
		rec := env.getList(t, "/v1/categories?"+query)
		if rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Errorf("?%s: got %d %s, want 200 %s", query, rec.Code, rec.Body, want)
		}
		if rec.Header().Get("Link") != "" {
			t.Errorf("?%s: a Link header on a look-up", query)
		}
	}
}

// A query never costs a 500: any query string is a 200 array or a 400 Error.
func FuzzListQuery(f *testing.F) {
	for _, s := range []string{"", "limit=10", "limit=2&after=1", "after=0", "name=dog", "name=%EF%BC%A4", "limit=0", "&", "=", "a=b", "limit=1&limit=2", "name=a&limit=1", "%", "after=99999999999999999999"} {
		f.Add(s)
	}
	oneProcPerFuzzWorker(f)
	env := newTestEnv(f, withLogTo(io.Discard))
	for _, n := range []string{"dog", "Cat", "ｂｉｒｄ"} {
		env.mustCreate(f, n)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/v1/categories", nil)
		r.URL.RawQuery = query
		r.Header.Set("Authorization", "Bearer "+testKey)
		rec := httptest.NewRecorder()
		env.handler.ServeHTTP(rec, r)
		switch rec.Code {
		case http.StatusOK:
			var list []petstoretest.Category
			if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
				t.Fatalf("?%s: 200 with a body that is not an array: %v %q", query, err, rec.Body)
			}
		case http.StatusBadRequest:
			if eb, ok := petstoretest.CheckErrorBody(t, rec.Code, rec.Header(), rec.Body.Bytes()); ok && eb.Code != codeInvalidParameter {
				t.Errorf("?%s: code %q, want invalid_parameter", query, eb.Code)
			}
		default:
			t.Fatalf("?%s: got %d, want 200 or 400; body %s", query, rec.Code, rec.Body)
		}
	})
}

// BenchmarkListPage compares a page of 100 and a look-up by name, both on a
// catalogue of 1,000,000, with the whole list of a catalogue of 100: a page
// is cut by id from the encoded list, so it should cost about the same.
//
//	go test -run '^$' -bench 'BenchmarkListPage$' -benchmem .
func BenchmarkListPage(b *testing.B) {
	small := benchEnv(b, 100)
	big := benchEnv(b, 1_000_000)
	for _, c := range []struct {
		name, path string
		env        *testEnv
	}{
		{"whole-list-of-100", "/v1/categories", small},
		{"page-of-100-from-1000000", "/v1/categories?limit=100&after=500000", big},
		{"name-from-1000000", "/v1/categories?name=CATEGORY-00000500000", big},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", c.path, nil)
			r.Header.Set("Authorization", "Bearer "+testKey)
			serveBench(b, c.env.handler, r, http.StatusOK)
		})
	}
}
