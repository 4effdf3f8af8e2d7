package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The OpenAPI 3.0.3 document served at /v1/openapi-3.0.json is derived from
// the 3.1 one when the service starts, never kept by hand (docs/api.md,
// "Other operations"). The converter walks the decoded JSON tree: the
// document's own objects, and the schemas it finds in the places OpenAPI
// puts them, each rewritten in the JSON Schema subset OpenAPI 3.0 knows.

// openAPI30Version is the version the derived document declares.
const openAPI30Version = "3.0.3"

// schemaOnly31 are the JSON Schema keywords a 3.0 schema does not have and
// that have no 3.0 spelling; the converter drops them.
var schemaOnly31 = []string{
	"$schema", "$id", "$anchor", "$comment", "$defs", "$dynamicRef", "$dynamicAnchor",
	"contentMediaType", "contentEncoding", "contentSchema",
	"dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
	"propertyNames", "prefixItems", "contains", "minContains", "maxContains",
	"patternProperties", "if", "then", "else",
}

// Convert30 returns doc31, an OpenAPI 3.1 document, expressed in OpenAPI
// 3.0.3, indented as Build indents.
func Convert30(doc31 []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(doc31, &doc); err != nil {
		return nil, fmt.Errorf("the OpenAPI 3.1 document: %w", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf("the OpenAPI document is version %q, not 3.1", v)
	}
	doc["openapi"] = openAPI30Version
	delete(doc, "jsonSchemaDialect")
	delete(doc, "webhooks")
	if info, ok := doc["info"].(map[string]any); ok {
		delete(info, "summary") // 3.0's Info has no summary
		if license, ok := info["license"].(map[string]any); ok {
			delete(license, "identifier")
		}
	}
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	delete(components, "pathItems")
	delete(components, "schemas") // put back converted, below
	convertObject30(doc)
	dropSecurityRoles30(doc)
	for name, s := range schemas {
		schemas[name] = convertSchema30(s)
	}
	if schemas != nil {
		components["schemas"] = schemas
	}
	return marshalDocument(doc)
}

// dropSecurityRoles30 empties the role lists of the operations' security
// requirements: 3.1 lets a bearer scheme's requirement name roles (the key
// scope), 3.0 wants the list empty for every scheme but OAuth2 and OpenID
// Connect. Each operation's 403 still names the scope it needs.
func dropSecurityRoles30(doc map[string]any) {
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		item, _ := item.(map[string]any)
		for _, op := range item {
			op, _ := op.(map[string]any)
			requirements, _ := op["security"].([]any)
			for _, req := range requirements {
				req, _ := req.(map[string]any)
				for scheme := range req {
					req[scheme] = []any{}
				}
			}
		}
	}
}

// convertObject30 rewrites the OpenAPI objects under v: a Reference object
// loses its siblings (3.0 ignores them), a schema found under "schema" is
// converted, and examples, which are data, are left as they are.
func convertObject30(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["$ref"]; ok {
			return map[string]any{"$ref": r}
		}
		for k, child := range v {
			switch k {
			case "schema":
				v[k] = convertSchema30(child)
			case "example", "examples":
			default:
				v[k] = convertObject30(child)
			}
		}
		return v
	case []any:
		for i, child := range v {
			v[i] = convertObject30(child)
		}
		return v
	}
	return v
}

// convertSchema30 returns the 3.1 schema v as a 3.0 Schema object.
func convertSchema30(v any) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v // true/false schemas have no 3.0 spelling; left for the linter to name
	}
	if r, ok := s["$ref"]; ok && len(s) > 1 {
		// 3.0 ignores a $ref's siblings: the reference joins an allOf.
		rest := maps.Clone(s)
		delete(rest, "$ref")
		rest["allOf"] = append([]any{map[string]any{"$ref": r}}, anyList(rest["allOf"])...)
		s = rest
	}
	for _, k := range schemaOnly31 {
		delete(s, k)
	}
	convertType30(s)
	convertKeywords30(s)
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if child, ok := s[k]; ok {
			s[k] = convertSchema30(child)
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, child := range props {
			props[name] = convertSchema30(child)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[k].([]any); ok {
			for i, child := range list {
				list[i] = convertSchema30(child)
			}
			dropNullAlternatives(s, k, list)
		}
	}
	return s
}

// convertType30 rewrites a type array: "null" becomes nullable, one other
// type stays the type, several become an anyOf of one type each.
func convertType30(s map[string]any) {
	types, ok := s["type"].([]any)
	if !ok {
		if s["type"] == "null" {
			delete(s, "type")
			s["nullable"] = true
			s["enum"] = []any{nil}
		}
		return
	}
	var others []any
	for _, t := range types {
		if t == "null" {
			s["nullable"] = true
		} else {
			others = append(others, t)
		}
	}
	delete(s, "type")
	switch len(others) {
	case 0:
		s["enum"] = []any{nil}
	case 1:
		s["type"] = others[0]
	default:
		var alternatives []any
		for _, t := range others {
			alternatives = append(alternatives, map[string]any{"type": t})
		}
		s["anyOf"] = append(anyList(s["anyOf"]), alternatives...)
	}
}

// convertKeywords30 rewrites the keywords 3.0 spells differently: const,
// examples, and numeric exclusiveMinimum and exclusiveMaximum.
func convertKeywords30(s map[string]any) {
	if c, ok := s["const"]; ok {
		delete(s, "const")
		s["enum"] = []any{c}
		if c == nil {
			s["nullable"] = true
		}
	}
	if examples, ok := s["examples"].([]any); ok {
		delete(s, "examples")
		if len(examples) > 0 {
			s["example"] = examples[0]
		}
	}
	for _, bound := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		exclusive, bound := bound[0], bound[1]
		n, ok := s[exclusive].(float64)
		if !ok {
			continue
		}
		delete(s, exclusive)
		inclusive, has := s[bound].(float64)
		stricter := !has || (exclusive == "exclusiveMinimum" && n >= inclusive) || (exclusive == "exclusiveMaximum" && n <= inclusive)
		if stricter {
			s[bound] = n
			s[exclusive] = true
		}
	}
}

// dropNullAlternatives takes the {"type": "null"} alternatives (converted
// already) out of the anyOf or oneOf list of s, making s nullable instead; a
// single alternative left joins an allOf.
func dropNullAlternatives(s map[string]any, k string, list []any) {
	if k == "allOf" {
		return
	}
	kept := slices.DeleteFunc(slices.Clone(list), func(alt any) bool {
		m, _ := alt.(map[string]any)
		enum := anyList(m["enum"])
		return len(m) == 2 && m["nullable"] == true && len(enum) == 1 && enum[0] == nil
	})
	if len(kept) == len(list) {
		return
	}
	s["nullable"] = true
	s[k] = kept
	if len(kept) == 1 {
		delete(s, k)
		s["allOf"] = append(anyList(s["allOf"]), kept[0])
	}
}

// anyList returns v as a list; nil when it is not one.
func anyList(v any) []any {
	list, _ := v.([]any)
	return list
}
