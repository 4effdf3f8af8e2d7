// Package openapitest reads OpenAPI documents decoded into any, for the
// tests of the documents petstore builds and serves.
package openapitest

import "strconv"

// Constructs31 names the 3.1-only constructs in the objects of doc: what
// an OpenAPI 3.0 document must not hold.
func Constructs31(doc any) []string {
	var problems []string
	Walk(doc, "#", func(where string, obj map[string]any) {
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

// Walk calls visit on every object under v, examples (data) aside.
func Walk(v any, where string, visit func(where string, obj map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		visit(where, v)
		for k, child := range v {
			if k != "example" && k != "default" && k != "enum" {
				Walk(child, where+"/"+k, visit)
			}
		}
	case []any:
		for i, child := range v {
			Walk(child, where+"/"+strconv.Itoa(i), visit)
		}
	}
}

// At follows keys from v through nested objects; nil when one is missing.
func At(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
