package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Tests of the OpenAPI 3.0.3 document: served without a key, the same
// operations as the 3.1 one, nothing of 3.1 left, references a 3.0
// generator follows.

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

// operationIDs maps "METHOD /full/path" to the operationId documented there.
func operationIDs(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	ids := map[string]any{}
	for key, op := range documentedOperations(t, doc) {
		ids[key] = op["operationId"]
	}
	return ids
}

func TestOpenAPI30SameOperations(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	doc31 := fetchDocumentAt(t, env, "/v1/openapi.json")
	doc30 := fetchDocumentAt(t, env, "/v1/openapi-3.0.json")
	if got := doc30["openapi"]; got != "3.0.3" {
		t.Errorf("openapi: got %v, want 3.0.3", got)
	}
	got, want := operationIDs(t, doc30), operationIDs(t, doc31)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("operations of the 3.0 document:\ngot  %v\nwant %v", got, want)
	}
	if want["GET /v1/openapi-3.0.json"] != "getOpenAPI30" {
		t.Errorf("the documents do not describe GET /v1/openapi-3.0.json: %v", want)
	}
	if !reflect.DeepEqual(doc30["components"].(map[string]any)["securitySchemes"], doc31["components"].(map[string]any)["securitySchemes"]) {
		t.Errorf("security schemes differ between the documents")
	}
}

// componentRef is the only reference form oapi-codegen follows.
var componentRef = regexp.MustCompile(`^#/components/(schemas|responses|parameters|examples|requestBodies|headers|securitySchemes|links|callbacks)/[^/]+$`)

// Both documents refer only to whole components, and every reference resolves.
func TestOpenAPIRefsNameComponents(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	for _, path := range []string{"/v1/openapi.json", "/v1/openapi-3.0.json"} {
		doc := fetchDocumentAt(t, env, path)
		refs := 0
		walkJSON(doc, "#", func(where string, obj map[string]any) {
			r, ok := obj["$ref"].(string)
			if !ok {
				return
			}
			refs++
			if !componentRef.MatchString(r) {
				t.Errorf("%s %s: $ref %q does not name a component", path, where, r)
			}
			if _, err := resolvePointer(doc, r); err != nil {
				t.Errorf("%s %s: $ref %q: %v", path, where, r, err)
			}
		})
		if refs < 10 {
			t.Errorf("%s: found %d $refs; the walk is not seeing the document", path, refs)
		}
	}
}

// No construct of 3.1 that 3.0 lacks is left in the served 3.0 document.
func TestOpenAPI30HasNothingOf31(t *testing.T) {
	t.Parallel()
	doc := fetchDocumentAt(t, newTestEnv(t), "/v1/openapi-3.0.json")
	for _, k := range []string{"jsonSchemaDialect", "webhooks"} {
		if _, ok := doc[k]; ok {
			t.Errorf("the 3.0 document has %s", k)
		}
	}
	for _, p := range [][]string{{"info", "summary"}, {"info", "license", "identifier"}, {"components", "pathItems"}} {
		if v := at(doc, p...); v != nil {
			t.Errorf("the 3.0 document has %v: %v", p, v)
		}
	}
	for _, problem := range constructsOf31(doc) {
		t.Error(problem)
	}
}

// constructsOf31 names the 3.1-only constructs in the objects of doc.
func constructsOf31(doc any) []string {
	var problems []string
	walkJSON(doc, "#", func(where string, obj map[string]any) {
		if _, ok := obj["$ref"]; ok && len(obj) > 1 {
			problems = append(problems, where+": $ref with siblings")
		}
		switch typ := obj["type"].(type) {
		case []any:
			problems = append(problems, where+": type array")
		case string:
			if typ == "null" {
				problems = append(problems, where+": type null")
			}
		}
		if _, ok := obj["examples"].([]any); ok {
			problems = append(problems, where+": examples array")
		}
		for _, k := range []string{"const", "contentMediaType", "contentEncoding", "$schema", "$defs", "prefixItems", "unevaluatedProperties"} {
			if _, ok := obj[k]; ok {
				problems = append(problems, where+": "+k)
			}
		}
		for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
			if _, ok := obj[k].(float64); ok {
				problems = append(problems, where+": numeric "+k)
			}
		}
	})
	return problems
}

// walkJSON calls visit on every object under v, examples (data) aside.
func walkJSON(v any, where string, visit func(where string, obj map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		visit(where, v)
		for k, child := range v {
			if k != "example" && k != "default" && k != "enum" {
				walkJSON(child, where+"/"+k, visit)
			}
		}
	case []any:
		for i, child := range v {
			walkJSON(child, where+"/"+strconv.Itoa(i), visit)
		}
	}
}

// Each 3.1 construct becomes its 3.0 spelling; the served document has few
// of them, so they are given here.
func TestConvertOpenAPI30Schemas(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"nullable type", `{"type":["string","null"]}`, `{"type":"string","nullable":true}`},
		{"several types", `{"type":["string","integer"]}`, `{"anyOf":[{"type":"string"},{"type":"integer"}]}`},
		{"null type", `{"type":"null"}`, `{"nullable":true,"enum":[null]}`},
		{"const", `{"type":"string","const":"ok"}`, `{"type":"string","enum":["ok"]}`},
		{"examples", `{"type":"integer","examples":[1,2]}`, `{"type":"integer","example":1}`},
		{"exclusive minimum", `{"type":"number","exclusiveMinimum":0}`, `{"type":"number","minimum":0,"exclusiveMinimum":true}`},
		{"exclusive maximum under maximum", `{"type":"number","maximum":10,"exclusiveMaximum":5}`, `{"type":"number","maximum":5,"exclusiveMaximum":true}`},
		{"exclusive minimum weaker", `{"type":"number","minimum":3,"exclusiveMinimum":1}`, `{"type":"number","minimum":3}`},
		{"ref siblings", `{"$ref":"#/components/schemas/A","description":"d"}`, `{"allOf":[{"$ref":"#/components/schemas/A"}],"description":"d"}`},
		{"nullable ref", `{"anyOf":[{"$ref":"#/components/schemas/A"},{"type":"null"}]}`, `{"allOf":[{"$ref":"#/components/schemas/A"}],"nullable":true}`},
		{"3.1 keywords", `{"type":"string","contentMediaType":"image/png","contentEncoding":"base64","$comment":"c"}`, `{"type":"string"}`},
		{"nested", `{"type":"object","properties":{"a":{"type":"array","items":{"const":1}}},"additionalProperties":{"examples":["x"]}}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{"enum":[1]}}},"additionalProperties":{"example":"x"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := `{"openapi":"3.1.1","info":{"title":"t","version":"1","summary":"s","license":{"name":"L","identifier":"MIT"}},` +
				`"jsonSchemaDialect":"x","webhooks":{},"paths":{"/a":{"get":{"parameters":[{"$ref":"#/components/parameters/P","description":"d"}],` +
				`"responses":{"200":{"description":"ok","content":{"application/json":{"schema":` + c.in + `}}}}}}},` +
				`"components":{"pathItems":{},"schemas":{"S":` + c.in + `}}}`
			out, err := convertOpenAPI30([]byte(doc))
			if err != nil {
				t.Fatalf("convertOpenAPI30: %v", err)
			}
			var got, want map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			for _, p := range [][]string{{"components", "schemas", "S"}, {"paths", "/a", "get", "responses", "200", "content", "application/json", "schema"}} {
				if s := at(got, p...); !reflect.DeepEqual(s, any(want)) {
					t.Errorf("%v: got %v, want %v", p, s, want)
				}
			}
			if problems := constructsOf31(got); len(problems) > 0 {
				t.Errorf("3.1 constructs left: %v", problems)
			}
			wantTop := `{"components":{"schemas":{}},"info":{"license":{"name":"L"},"title":"t","version":"1"},"openapi":"3.0.3","paths":{"/a":{"get":{"parameters":[{"$ref":"#/components/parameters/P"}]}}}}`
			var top map[string]any
			_ = json.Unmarshal([]byte(wantTop), &top)
			delete(at(got, "components").(map[string]any), "schemas")
			delete(at(got, "paths", "/a", "get").(map[string]any), "responses")
			delete(at(top, "components").(map[string]any), "schemas")
			if !reflect.DeepEqual(got, top) {
				t.Errorf("the document around the schema: got %v, want %v", got, top)
			}
		})
	}
}

func TestConvertOpenAPI30RefusesOtherVersions(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`{"openapi":"3.0.3"}`, `{}`, `[`} {
		if _, err := convertOpenAPI30([]byte(doc)); err == nil {
			t.Errorf("convertOpenAPI30(%s): no error", doc)
		}
	}
}

// `petstore -openapi-3.0` writes exactly the 3.0 document the service serves.
func TestRunWritesOpenAPI30(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	env := map[string]string{"PETSTORE_PETS_DEPRECATED": "2026-03-04T05:06:07Z", "PETSTORE_PETS_SUNSET": "2027-08-09T10:11:12Z"}
	err := run(context.Background(), []string{"petstore", "-openapi-3.0"}, func(k string) string { return env[k] }, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run -openapi-3.0: %v; stderr %s", err, &stderr)
	}
	served := newTestEnv(t, withPets(deprecation{at: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), sunset: time.Date(2027, 8, 9, 10, 11, 12, 0, time.UTC)})).
		do(t, request{method: "GET", path: "/v1/openapi-3.0.json", header: map[string]string{}}).Body.String()
	if got := stdout.String(); got != served+"\n" {
		t.Errorf("run -openapi-3.0 wrote %d bytes that differ from the %d served", len(got), len(served))
	}
	if stderr.Len() != 0 {
		t.Errorf("run -openapi-3.0 wrote to stderr: %s", &stderr)
	}
}
