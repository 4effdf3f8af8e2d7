package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikey"
	"petstore/internal/openapi"
	"petstore/internal/openapi/openapitest"
	"petstore/internal/store"
)

// Tests of the OpenAPI document and of the deprecation mechanism: the
// document against the route table, its references, and the Deprecation
// and Sunset headers. The statuses the handler tests observe are checked
// against the document by TestMain (main_test.go).

// withPets sets the configured deprecation of GET /v1/pets/{petId}.
func withPets(dep deprecation) testOption {
	return func(d *deps, _ *[]route) { d.pets = dep }
}

// fetchDocument gets the served document, without a key, and decodes it.
func fetchDocument(t *testing.T, env *testEnv) map[string]any {
	t.Helper()
	return fetchDocumentAt(t, env, "/v1/openapi.json")
}

// fetchDocumentAt gets the document at path, without a key, and decodes it.
func fetchDocumentAt(t *testing.T, env *testEnv, path string) map[string]any {
	t.Helper()
	rec := env.do(t, request{method: "GET", path: path, header: map[string]string{}})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s without a key: got %d, want 200; body %s", path, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type: got %q, want application/json", path, ct)
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("GET %s: not JSON: %v", path, err)
	}
	return doc
}

// documentedOperations maps "METHOD /full/path" (as in the route table) to
// the operation object, undoing the /v1 base of the servers: a path item
// with its own servers is served at the origin.
func documentedOperations(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	ops := map[string]map[string]any{}
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		t.Fatalf("paths is not an object: %v", doc["paths"])
	}
	for p, item := range paths {
		item := item.(map[string]any)
		full := "/v1" + p
		if item["servers"] != nil {
			full = p
		}
		for method, op := range item {
			if method == "servers" || method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			ops[strings.ToUpper(method)+" "+full] = op.(map[string]any)
		}
	}
	return ops
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := fetchDocument(t, newTestEnv(t))

	if v, _ := doc["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Errorf("openapi: got %q, want 3.1.x", v)
	}
	if v := openapitest.At(doc, "info", "version"); v != "1.0.0" {
		t.Errorf("info.version: got %v, want 1.0.0", v)
	}
	if v := openapitest.At(doc, "info", "title"); v == nil || v == "" {
		t.Errorf("info.title is missing")
	}

	servers, _ := doc["servers"].([]any)
	var names []string
	for _, s := range servers {
		url, _ := openapitest.At(s, "url").(string)
		names = append(names, fmt.Sprint(openapitest.At(s, "description")))
		variable := strings.Trim(url, "{}")
		def, _ := openapitest.At(s, "variables", variable, "default").(string)
		if !strings.HasSuffix(def, "/v1") {
			t.Errorf("server %v: url %q must be a variable whose default ends with /v1, got default %q", openapitest.At(s, "description"), url, def)
		}
	}
	if !slices.Equal(names, []string{"Production", "Staging"}) {
		t.Errorf("servers: got %v, want Production and Staging", names)
	}

	if v := openapitest.At(doc, "components", "securitySchemes", "bearerAuth"); openapitest.At(v, "type") != "http" || openapitest.At(v, "scheme") != "bearer" {
		t.Errorf("bearerAuth security scheme: got %v", v)
	}
	security, _ := json.Marshal(doc["security"])
	if string(security) != `[{"bearerAuth":[]}]` {
		t.Errorf("global security: got %s, want bearerAuth", security)
	}

	for schema, required := range map[string][]any{
		"NewCategory": {"name"},
		"Category":    {"id", "name"},
		"Error":       {"code", "message", "status"},
	} {
		s := openapitest.At(doc, "components", "schemas", schema)
		if got, _ := openapitest.At(s, "required").([]any); !slices.Equal(got, required) {
			t.Errorf("schema %s: required %v, want %v", schema, got, required)
		}
	}
	if id := openapitest.At(doc, "components", "schemas", "Category", "properties", "id"); openapitest.At(id, "type") != "integer" || openapitest.At(id, "format") != "int64" {
		t.Errorf("Category.id: got %v, want integer int64", id)
	}
	for _, schema := range []string{"NewCategory", "Category"} {
		if r := openapitest.At(doc, "components", "schemas", schema, "properties", "name", "$ref"); r != "#/components/schemas/CategoryName" {
			t.Errorf("%s.name: got $ref %v, want #/components/schemas/CategoryName", schema, r)
		}
	}
	if n := openapitest.At(doc, "components", "schemas", "CategoryName"); openapitest.At(n, "maxLength") != 100.0 || openapitest.At(n, "minLength") != 1.0 {
		t.Errorf("CategoryName bounds: got %v, want 1..100", n)
	}
	code := openapitest.At(doc, "components", "schemas", "Error", "properties", "code")
	if openapitest.At(code, "enum") != nil {
		t.Errorf("Error.code is a closed enum; a later code would break generated clients")
	}
	var codes []string
	for _, c := range openapitest.At(code, "x-extensible-enum").([]any) {
		codes = append(codes, c.(string))
	}
	for code := range statusOf {
		if !slices.Contains(codes, code) {
			t.Errorf("Error.code's x-extensible-enum lacks %q", code)
		}
	}
	for _, code := range codes {
		if _, ok := statusOf[code]; !ok {
			t.Errorf("Error.code's x-extensible-enum has %q, which the service never sends", code)
		}
	}
	// A code no operation's answers name (`code` in a response's
	// description) is said to be answered elsewhere, and only such a code.
	named := map[string]bool{}
	for _, item := range openapitest.At(doc, "paths").(map[string]any) {
		for _, op := range item.(map[string]any) {
			responses, _ := openapitest.At(op, "responses").(map[string]any)
			for _, r := range responses {
				parts := strings.Split(fmt.Sprint(openapitest.At(r, "description")), "`")
				for i := 1; i < len(parts); i += 2 {
					named[parts[i]] = true
				}
			}
		}
	}
	elsewhere, _ := openapitest.At(code, "x-answered-elsewhere").(map[string]any)
	for _, c := range codes {
		if why, ok := elsewhere[c].(string); named[c] == ok || ok && why == "" {
			t.Errorf("code %q: named by an operation %v, answered elsewhere %q; want exactly one", c, named[c], why)
		}
	}
	for c := range elsewhere {
		if !slices.Contains(codes, c) {
			t.Errorf("x-answered-elsewhere has %q, which is not in x-extensible-enum", c)
		}
	}
}

// Generated clients can live with a later version: no schema of an answer
// forbids members it does not list, in either document, while the request
// body's stays strict (unknown members are refused).
func TestOpenAPIResponsesOpen(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for _, path := range []string{"/v1/openapi.json", "/v1/openapi-3.0.json"} {
		doc := fetchDocumentAt(t, env, path)
		schemas := 0
		seen := map[string]bool{}
		var walk func(v any, where string)
		walk = func(v any, where string) {
			switch v := v.(type) {
			case map[string]any:
				if ref, ok := v["$ref"].(string); ok && !seen[ref] {
					seen[ref] = true
					walk(openapitest.At(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...), ref)
				}
				if v["type"] == "object" {
					schemas++
					if ap, ok := v["additionalProperties"].(bool); ok && !ap {
						t.Errorf("%s: %s forbids members a later version may add", path, where)
					}
				}
				for k, e := range v {
					walk(e, where+"/"+k)
				}
			case []any:
				for i, e := range v {
					walk(e, fmt.Sprintf("%s/%d", where, i))
				}
			}
		}
		for p, item := range openapitest.At(doc, "paths").(map[string]any) {
			for m, op := range item.(map[string]any) {
				if r, ok := openapitest.At(op, "responses").(map[string]any); ok {
					walk(r, p+" "+m+" responses")
				}
			}
		}
		if schemas < 4 || !seen["#/components/schemas/Category"] || !seen["#/components/schemas/Error"] {
			t.Errorf("%s: the walk met %d object schemas and %v; want Category, Error and more", path, schemas, slices.Collect(maps.Keys(seen)))
		}
		if ap := openapitest.At(doc, "components", "schemas", "NewCategory", "additionalProperties"); ap != false {
			t.Errorf("%s: NewCategory.additionalProperties %v, want false (unknown members are refused)", path, ap)
		}
	}
}

// Every $ref in the document points at something in it.
func TestOpenAPIReferencesResolve(t *testing.T) {
	t.Parallel()
	doc := fetchDocument(t, newTestEnv(t))
	refs := 0
	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				refs++
				if _, err := resolvePointer(doc, r); err != nil {
					t.Errorf("%s: $ref %q: %v", where, r, err)
				}
			}
			for k, child := range v {
				walk(child, where+"/"+k)
			}
		case []any:
			for i, child := range v {
				walk(child, where+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "#")
	if refs < 10 {
		t.Errorf("found %d $refs; the walk is not seeing the document", refs)
	}
	if _, err := resolvePointer(doc, "#/components/schemas/Nope"); err == nil {
		t.Errorf("resolvePointer accepted a pointer to nothing")
	}
}

// resolvePointer resolves a local JSON pointer (RFC 6901) in doc.
func resolvePointer(doc any, ref string) (any, error) {
	pointer, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("not a local reference")
	}
	v := doc
	for _, token := range strings.Split(pointer, "/")[1:] {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		switch node := v.(type) {
		case map[string]any:
			child, ok := node[token]
			if !ok {
				return nil, fmt.Errorf("no member %q", token)
			}
			v = child
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(node) {
				return nil, fmt.Errorf("no element %q", token)
			}
			v = node[i]
		default:
			return nil, fmt.Errorf("cannot descend into %T at %q", v, token)
		}
	}
	return v, nil
}

// The document and the route table describe the same operations, with the
// same auth, deprecation and stability.
func TestOpenAPIMatchesRouteTable(t *testing.T) {
	t.Parallel()
	dep := deprecation{at: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), sunset: time.Date(2027, 8, 9, 10, 11, 12, 0, time.UTC)}
	env := newTestEnv(t, withPets(dep))
	ops := documentedOperations(t, fetchDocument(t, env))
	table := routes(deps{store: store.NewMemory(store.Options{}), pets: dep}, nil, nil, nil)

	// Every GET route answers HEAD too: the document has both.
	type documented struct {
		rt     route
		method string
	}
	var expected []documented
	for _, rt := range table {
		expected = append(expected, documented{rt, rt.method})
		if rt.method == "GET" {
			expected = append(expected, documented{rt, "HEAD"})
		}
	}
	inTable := map[string]bool{}
	for _, e := range expected {
		rt, head := e.rt, e.method == "HEAD"
		key := e.method + " " + rt.path
		inTable[key] = true
		op, ok := ops[key]
		if !ok {
			t.Errorf("%s is in the route table but not in the document", key)
			continue
		}
		wantID := rt.operationID
		if head {
			wantID += "Head"
			if get := openapitest.At(ops["GET "+rt.path], "responses").(map[string]any); len(get) != len(op["responses"].(map[string]any)) {
				t.Errorf("%s: %d statuses, GET has %d", key, len(op["responses"].(map[string]any)), len(get))
			}
		}
		if op["operationId"] != wantID {
			t.Errorf("%s: operationId %v, want %s", key, op["operationId"], wantID)
		}
		security, present := op["security"]
		if public := present && len(security.([]any)) == 0; public != rt.public {
			t.Errorf("%s: documented without auth = %v, route public = %v", key, public, rt.public)
		}
		if deprecated := op["deprecated"] == true; deprecated != (rt.deprecation != nil) {
			t.Errorf("%s: documented deprecated = %v, route deprecated = %v", key, deprecated, rt.deprecation != nil)
		}
		if got, _ := op["x-stability"].(string); got != rt.stability {
			t.Errorf("%s: x-stability %q, route stability %q", key, got, rt.stability)
		}
		responses, _ := op["responses"].(map[string]any)
		if !rt.public && responses["401"] == nil {
			t.Errorf("%s needs a key but does not document 401", key)
		}
		for status, r := range responses {
			headers, _ := openapitest.At(r, "headers").(map[string]any)
			if headers["X-Request-Id"] == nil {
				t.Errorf("%s %s: X-Request-Id not documented", key, status)
			}
			_, hasDeprecation := headers["Deprecation"]
			_, hasSunset := headers["Sunset"]
			wantHeaders := rt.deprecation != nil && status != "405"
			if hasDeprecation != wantHeaders || hasSunset != wantHeaders {
				t.Errorf("%s %s: Deprecation/Sunset documented = %v/%v, want %v", key, status, hasDeprecation, hasSunset, wantHeaders)
			}
			code, _ := strconv.Atoi(status)
			switch {
			case head && openapitest.At(r, "content") != nil:
				t.Errorf("%s %s: a HEAD answer documented with a body", key, status)
			case !head && code >= 400 && openapitest.At(r, "content", "application/json", "schema", "$ref") != "#/components/schemas/Error":
				t.Errorf("%s %s: body is not the Error schema", key, status)
			}
		}
		if rt.deprecation != nil {
			for status, r := range responses {
				if status == "405" {
					continue
				}
				if got := openapitest.At(r, "headers", "Deprecation", "example"); got != "@1772600767" {
					t.Errorf("%s %s: Deprecation value %v, want @1772600767 (the configured instant)", key, status, got)
				}
				if got := openapitest.At(r, "headers", "Sunset", "example"); got != "Mon, 09 Aug 2027 10:11:12 GMT" {
					t.Errorf("%s %s: Sunset value %v, want the configured instant", key, status, got)
				}
			}
			if got := op["x-sunset"]; got != "2027-08-09T10:11:12Z" {
				t.Errorf("%s: x-sunset %v, want 2027-08-09T10:11:12Z", key, got)
			}
		}
	}
	for key := range ops {
		if !inTable[key] {
			t.Errorf("%s is documented but not in the route table", key)
		}
	}
	for key, want := range map[string]struct{ header, status string }{
		"POST /v1/categories":     {"Location", "201"},
		"GET /v1/categories":      {"ETag", "200"},
		"GET /v1/categories/{id}": {"Allow", "405"},
		"GET /v1/store/orders":    {"WWW-Authenticate", "401"},
	} {
		if openapitest.At(ops[key], "responses", want.status, "headers", want.header) == nil {
			t.Errorf("%s %s: %s header not documented", key, want.status, want.header)
		}
	}
	if got := openapitest.At(ops["GET /v1/categories/{id}"], "x-stability"); got != "experimental" {
		t.Errorf("GET /v1/categories/{id}: x-stability %v, want experimental", got)
	}
	if got := openapitest.At(ops["GET /v1/pets/{petId}"], "deprecated"); got != true {
		t.Errorf("GET /v1/pets/{petId}: deprecated %v, want true", got)
	}
}

// The document cannot be built when the route table and the static parts
// disagree, in either direction.
func TestBuildOpenAPIRefusesDrift(t *testing.T) {
	t.Parallel()
	table := routes(deps{store: store.NewMemory(store.Options{}), pets: deprecation{at: beforePetsSunset, sunset: afterPetsSunset}}, nil, nil, nil)
	buildOpenAPI := func(rs []route) ([]byte, error) { return openapi.Build(openAPIOperations(rs), statusOf) }
	undescribed := append(slices.Clone(table), route{method: "DELETE", path: "/v1/categories/{id}", operationID: "deleteCategory", handler: http.NotFoundHandler()})
	if _, err := buildOpenAPI(undescribed); err == nil || !strings.Contains(err.Error(), "deleteCategory") {
		t.Errorf("a route the static parts do not describe: got %v, want an error naming it", err)
	}
	if _, err := buildOpenAPI(table[1:]); err == nil || !strings.Contains(err.Error(), table[0].operationID) {
		t.Errorf("a described operation no route serves: got %v, want an error naming %s", err, table[0].operationID)
	}
	twice := append(slices.Clone(table), table[0])
	if _, err := buildOpenAPI(twice); err == nil {
		t.Errorf("an operation twice in the table was accepted")
	}
}

// `petstore -openapi` writes exactly the document the service serves.
func TestRunWritesOpenAPI(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	env := map[string]string{"PETSTORE_PETS_DEPRECATED": "2026-03-04T05:06:07Z", "PETSTORE_PETS_SUNSET": "2027-08-09T10:11:12Z"}
	err := run(context.Background(), []string{"petstore", "-openapi"}, environOf(env), &stdout, &stderr)
	if err != nil {
		t.Fatalf("run -openapi: %v; stderr %s", err, &stderr)
	}
	served := newTestEnv(t, withPets(deprecation{at: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), sunset: time.Date(2027, 8, 9, 10, 11, 12, 0, time.UTC)})).
		do(t, request{method: "GET", path: "/v1/openapi.json", header: map[string]string{}}).Body.String()
	if got := stdout.String(); got != served+"\n" {
		t.Errorf("run -openapi wrote %d bytes that differ from the %d served", len(got), len(served))
	}
	if stderr.Len() != 0 {
		t.Errorf("run -openapi wrote to stderr: %s", &stderr)
	}
}

// Every answer of the deprecated operation carries Deprecation and Sunset
// with the configured values; no other operation's answers do.
func TestDeprecationHeaders(t *testing.T) {
	t.Parallel()
	dep := deprecation{at: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), sunset: time.Date(2027, 8, 9, 10, 11, 12, 0, time.UTC)}
	const (
		wantDeprecation = "@1772600767"
		wantSunset      = "Mon, 09 Aug 2027 10:11:12 GMT"
	)
	beforeSunset, atSunset := dep.sunset.Add(-time.Second), dep.sunset
	// A deprecated route that succeeds, registered only by this test: the
	// headers come from the route's deprecation, whatever the handler.
	okRoute := route{method: "GET", path: "/v1/test/deprecated-ok", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, []byte(`{}`))
	}), scope: apikey.Read, deprecation: &dep}
	noKey := map[string]string{}
	badKey := map[string]string{"Authorization": "Bearer not-a-key"}

	tests := []struct {
		name   string
		now    time.Time
		path   string
		header map[string]string
		status int
	}{
		{"200 of a deprecated route", beforeSunset, "/v1/test/deprecated-ok", nil, http.StatusOK},
		{"501 before the sunset", beforeSunset, "/v1/pets/1", nil, http.StatusNotImplemented},
		{"401 without a key", beforeSunset, "/v1/pets/1", noKey, http.StatusUnauthorized},
		{"401 with a wrong key", beforeSunset, "/v1/pets/1", badKey, http.StatusUnauthorized},
		{"410 at the sunset instant", atSunset, "/v1/pets/1", nil, http.StatusGone},
		{"410 after the sunset", atSunset.Add(24 * time.Hour), "/v1/pets/1", nil, http.StatusGone},
		{"401 after the sunset", atSunset.Add(time.Hour), "/v1/pets/1", noKey, http.StatusUnauthorized},
		{"410 of a deprecated route after its sunset", atSunset, "/v1/test/deprecated-ok", nil, http.StatusGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, withPets(dep), withNow(tt.now), withRoute(okRoute))
			for _, method := range []string{"GET", "HEAD"} {
				rec := env.do(t, request{method: method, path: tt.path, header: tt.header})
				if rec.Code != tt.status {
					t.Fatalf("%s %s: got %d, want %d; body %s", method, tt.path, rec.Code, tt.status, rec.Body)
				}
				if got := rec.Header().Values("Deprecation"); !slices.Equal(got, []string{wantDeprecation}) {
					t.Errorf("%s: Deprecation %q, want %q", method, got, wantDeprecation)
				}
				if got := rec.Header().Values("Sunset"); !slices.Equal(got, []string{wantSunset}) {
					t.Errorf("%s: Sunset %q, want %q", method, got, wantSunset)
				}
				if method == "GET" && tt.status == http.StatusGone {
					mustError(t, rec, http.StatusGone, codeGone)
				}
			}
		})
	}

	// No other operation carries them, whatever its answer.
	env := newTestEnv(t, withPets(dep), withNow(atSunset.Add(time.Hour)))
	env.mustCreate(t, "dog")
	for _, req := range []request{
		{method: "GET", path: "/v1/categories"},
		{method: "GET", path: "/v1/categories", header: noKey},
		{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`},
		{method: "POST", path: "/v1/categories", body: `{"name":"cat"}`},
		{method: "GET", path: "/v1/categories/1"},
		{method: "GET", path: "/v1/categories/9"},
		{method: "GET", path: "/v1/store/orders"},
		{method: "GET", path: "/v1/openapi.json", header: noKey},
		{method: "GET", path: "/healthz", header: noKey},
		{method: "DELETE", path: "/v1/pets/1"},
		{method: "GET", path: "/v1/nope"},
	} {
		rec := env.do(t, req)
		if rec.Header().Get("Deprecation") != "" || rec.Header().Get("Sunset") != "" {
			t.Errorf("%s %s (%d) carries Deprecation %q, Sunset %q", req.method, req.path, rec.Code, rec.Header().Get("Deprecation"), rec.Header().Get("Sunset"))
		}
	}
}

// Instants are cut to whole seconds, all that Sunset can say, so the 410
// starts exactly at the advertised instant.
func TestDeprecationInstantsAreWholeSeconds(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PETSTORE_PETS_DEPRECATED": "2026-03-04T05:06:07.5Z", "PETSTORE_PETS_SUNSET": "2027-08-09T10:11:12.9+00:00"}
	dep, err := loadPetsDeprecation(mapEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	sunset := time.Date(2027, 8, 9, 10, 11, 12, 0, time.UTC)
	if !dep.sunset.Equal(sunset) || !dep.at.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) {
		t.Fatalf("instants: got %v and %v, want whole seconds", dep.at, dep.sunset)
	}
	rec := newTestEnv(t, withPets(dep), withNow(sunset)).do(t, request{method: "GET", path: "/v1/pets/1"})
	mustError(t, rec, http.StatusGone, codeGone)
	if got := rec.Header().Get("Sunset"); got != "Mon, 09 Aug 2027 10:11:12 GMT" {
		t.Errorf("Sunset: got %q", got)
	}
}
