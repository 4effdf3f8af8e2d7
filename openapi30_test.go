package main

import (
	"bytes"
	"context"
	"reflect"
	"regexp"
	"testing"
	"time"

	"petstore/internal/openapi/openapitest"
)

// Tests of the OpenAPI 3.0.3 document the service serves: served without a
// key, the same operations as the 3.1 one, nothing of 3.1 left, references a
// 3.0 generator follows. internal/openapi tests the conversion of each 3.1
// construct.

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
		openapitest.Walk(doc, "#", func(where string, obj map[string]any) {
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
		if v := openapitest.At(doc, p...); v != nil {
			t.Errorf("the 3.0 document has %v: %v", p, v)
		}
	}
	for _, problem := range openapitest.Constructs31(doc) {
		t.Error(problem)
	}
}

// `petstore -openapi-3.0` writes exactly the 3.0 document the service serves.
func TestRunWritesOpenAPI30(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	env := map[string]string{"PETSTORE_PETS_DEPRECATED": "2026-03-04T05:06:07Z", "PETSTORE_PETS_SUNSET": "2027-08-09T10:11:12Z"}
	err := run(context.Background(), []string{"petstore", "-openapi-3.0"}, environOf(env), &stdout, &stderr)
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
