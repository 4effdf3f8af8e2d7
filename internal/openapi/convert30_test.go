package openapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"petstore/internal/openapi/openapitest"
)

// Tests of Convert30 without the service: each 3.1 construct in a small
// document of its own. The service's tests check the served 3.0 document
// (openapi30_test.go at the top of the module).

// Each 3.1 construct becomes its 3.0 spelling; the served document has few
// of them, so they are given here.
func TestConvert30Schemas(t *testing.T) {
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
			out, err := Convert30([]byte(doc))
			if err != nil {
				t.Fatalf("Convert30: %v", err)
			}
			var got, want map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			for _, p := range [][]string{{"components", "schemas", "S"}, {"paths", "/a", "get", "responses", "200", "content", "application/json", "schema"}} {
				if s := openapitest.At(got, p...); !reflect.DeepEqual(s, any(want)) {
					t.Errorf("%v: got %v, want %v", p, s, want)
				}
			}
			if problems := openapitest.Constructs31(got); len(problems) > 0 {
				t.Errorf("3.1 constructs left: %v", problems)
			}
			wantTop := `{"components":{"schemas":{}},"info":{"license":{"name":"L"},"title":"t","version":"1"},"openapi":"3.0.3","paths":{"/a":{"get":{"parameters":[{"$ref":"#/components/parameters/P"}]}}}}`
			var top map[string]any
			_ = json.Unmarshal([]byte(wantTop), &top)
			delete(openapitest.At(got, "components").(map[string]any), "schemas")
			delete(openapitest.At(got, "paths", "/a", "get").(map[string]any), "responses")
			delete(openapitest.At(top, "components").(map[string]any), "schemas")
			if !reflect.DeepEqual(got, top) {
				t.Errorf("the document around the schema: got %v, want %v", got, top)
			}
		})
	}
}

func TestConvert30RefusesOtherVersions(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`{"openapi":"3.0.3"}`, `{}`, `[`} {
		if _, err := Convert30([]byte(doc)); err == nil {
			t.Errorf("Convert30(%s): no error", doc)
		}
	}
}
