package main

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"petstore/internal/rawjson"
	"slices"
	"strconv"
	"strings"
	"time"
)

// openAPIStatic holds the parts of the OpenAPI document that the route table
// cannot say: schemas, servers, wording, and each operation's own responses.
//
//go:embed openapi_static.json
var openAPIStatic []byte

// apiBase is the path segment the documented servers end with: the document's
// paths are relative to it, and a route outside it (/healthz) is documented
// with servers at the origin.
const apiBase = "/v1"

// staticParts is the shape of openapi_static.json.
type staticParts struct {
	Document      map[string]any            `json:"document"`      // the document, without paths
	OriginServers []any                     `json:"originServers"` // servers of routes outside apiBase
	Errors        map[string]string         `json:"errors"`        // status → description of the answers middleware gives
	Operations    map[string]map[string]any `json:"operations"`    // operationId → summary, parameters, own responses …
}

// handleDocument handles "GET /v1/openapi.json" and "GET /v1/openapi-3.0.json":
// an OpenAPI document, built once at start by newServer.
func handleDocument(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, doc)
	})
}

// buildOpenAPI returns the OpenAPI 3.1 document of table. Everything a route
// entry says (path, method, auth, deprecation, stability) comes from the
// table; openapi_static.json must describe exactly the table's operations.
func buildOpenAPI(table []route) ([]byte, error) {
	var st staticParts
	if err := json.Unmarshal(openAPIStatic, &st); err != nil {
		return nil, fmt.Errorf("openapi_static.json: %w", err)
	}
	paths := map[string]map[string]any{}
	described := map[string]bool{}
	for _, rt := range table {
		static, ok := st.Operations[rt.operationID]
		if !ok {
			return nil, fmt.Errorf("openapi_static.json does not describe %s %s (operation %q)", rt.method, rt.path, rt.operationID)
		}
		if described[rt.operationID] {
			return nil, fmt.Errorf("operation %q is in the route table twice", rt.operationID)
		}
		described[rt.operationID] = true
		op, err := describeOperation(rt, static, st.Errors)
		if err != nil {
			return nil, err
		}
		docPath, inBase := strings.CutPrefix(rt.path, apiBase)
		item := paths[docPath]
		if item == nil {
			item = map[string]any{}
			if !inBase {
				docPath = rt.path
				item["servers"] = st.OriginServers
			}
			paths[docPath] = item
		}
		for _, method := range rt.methods() {
			if method == rt.method {
				item[strings.ToLower(method)] = op
			} else {
				item[strings.ToLower(method)] = headOperation(op)
			}
		}
	}
	for id := range st.Operations {
		if !described[id] {
			return nil, fmt.Errorf("openapi_static.json describes operation %q, which no route serves", id)
		}
	}
	doc := st.Document
	if err := describeErrorCodes(doc); err != nil {
		return nil, err
	}
	doc["security"] = []any{map[string]any{"bearerAuth": []any{}}}
	doc["paths"] = paths
	return marshalDocument(doc)
}

// describeErrorCodes fills in the Error schema's code from the one table of
// errors (statusOf): enum, every code by status, and x-status, the status
// of each.
func describeErrorCodes(doc map[string]any) error {
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	errSchema, _ := schemas["Error"].(map[string]any)
	props, _ := errSchema["properties"].(map[string]any)
	code, ok := props["code"].(map[string]any)
	if !ok {
		return fmt.Errorf("openapi_static.json has no Error schema with a code property")
	}
	codes := slices.SortedFunc(maps.Keys(statusOf), func(a, b string) int {
		return cmp.Or(cmp.Compare(statusOf[a], statusOf[b]), strings.Compare(a, b))
	})
	enum := make([]any, len(codes))
	statuses := make(map[string]any, len(codes))
	for i, c := range codes {
		enum[i], statuses[c] = c, statusOf[c]
	}
	code["enum"], code["x-status"] = enum, statuses
	return nil
}

// documentOrder is the order of the document's top-level members; others
// follow in name order. (encoding/json writes a map's keys sorted.)
var documentOrder = []string{"openapi", "info", "servers", "security", "tags", "paths", "components"}

// marshalDocument writes doc indented, its top-level members in the order
// a reader expects.
func marshalDocument(doc map[string]any) ([]byte, error) {
	keys := slices.Sorted(maps.Keys(doc))
	slices.SortStableFunc(keys, func(a, b string) int {
		return cmpRank(slices.Index(documentOrder, a), slices.Index(documentOrder, b))
	})
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		v, err := json.Marshal(doc[k])
		if err != nil {
			return nil, fmt.Errorf("OpenAPI document member %q: %w", k, err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(rawjson.AppendString(nil, k))
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// cmpRank orders ranks from slices.Index, with -1 (unranked) last.
func cmpRank(a, b int) int {
	if a < 0 {
		a = len(documentOrder)
	}
	if b < 0 {
		b = len(documentOrder)
	}
	return a - b
}

// describeOperation completes an operation's static description with what
// its route entry implies: the answers its middleware gives (401, 410, 500;
// 405 from its path), the headers of every answer, its security, its
// deprecation and its stability.
func describeOperation(rt route, static map[string]any, errs map[string]string) (map[string]any, error) {
	op := maps.Clone(static)
	op["operationId"] = rt.operationID
	params, _ := op["parameters"].([]any)
	op["parameters"] = append(slices.Clone(params), ref("#/components/parameters/RequestId"))
	if rt.public {
		op["security"] = []any{}
	} else {
		// OpenAPI 3.1 lets a requirement of a bearer scheme name roles:
		// here the key scope the operation needs.
		op["security"] = []any{map[string]any{"bearerAuth": []any{rt.scope.String()}}}
	}
	if rt.stability != "" {
		op["x-stability"] = rt.stability
	}
	var deprecationHeaders map[string]any
	if dep := rt.deprecation; dep != nil {
		deprecationHeaders = describeDeprecation(op, dep)
	}
	responses, err := impliedResponses(rt, static, errs)
	if err != nil {
		return nil, err
	}
	for status, r := range responses {
		resp, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("operation %q: response %s is not an object", rt.operationID, status)
		}
		responses[status] = describeResponse(rt, status, resp, deprecationHeaders)
	}
	op["responses"] = responses
	return op, nil
}

// describeDeprecation marks op deprecated as of dep, says when in its
// description, and returns the headers its answers carry for it.
func describeDeprecation(op map[string]any, dep *deprecation) map[string]any {
	op["deprecated"] = true
	op["x-sunset"] = dep.sunset.UTC().Format(time.RFC3339)
	desc, _ := op["description"].(string)
	op["description"] = strings.TrimSpace(fmt.Sprintf("%s\n\nDeprecated as of %s; its sunset is %s, from which on it answers 410 `gone`.",
		desc, dep.at.UTC().Format(time.RFC3339), dep.sunset.UTC().Format(time.RFC3339)))
	deprecated, sunset := dep.headerValues()
	return map[string]any{
		"Deprecation": configuredHeader("When the operation was deprecated (RFC 9745): `@` and Unix seconds.", deprecated),
		"Sunset":      configuredHeader("When the operation goes away (RFC 8594); from then on it answers 410.", sunset),
	}
}

// impliedResponses returns the operation's own responses and those its
// route's middleware gives (400, 405 and 500 always; 401, 403 and 429 past
// the key check; 410 once deprecated), described from errs where the
// operation does not word them itself. The 403 of a key without the scope
// names the scope and comes before the operation's own 403, if it has one.
func impliedResponses(rt route, static map[string]any, errs map[string]string) (map[string]any, error) {
	own, _ := static["responses"].(map[string]any)
	responses := maps.Clone(own)
	implied := []string{"400", "405", "500"} // 400: every operation checks its query (docs/api.md, "Pages and look-up by name")
	if !rt.public {
		implied = append(implied, "401", "429")
	}
	if rt.deprecation != nil {
		implied = append(implied, "410")
	}
	if !rt.public {
		scoped, ok := errs["403"]
		if !ok {
			return nil, fmt.Errorf("openapi_static.json has no description of status 403")
		}
		scoped = strings.ReplaceAll(scoped, "{scope}", rt.scope.String())
		if own, ok := responses["403"].(map[string]any); ok {
			own = maps.Clone(own)
			own["description"] = scoped + " " + fmt.Sprint(own["description"])
			responses["403"] = own
		} else {
			responses["403"] = map[string]any{"description": scoped}
		}
	}
	for _, status := range implied {
		if _, ok := responses[status]; ok {
			continue // the operation's own wording wins
		}
		desc, ok := errs[status]
		if !ok {
			return nil, fmt.Errorf("openapi_static.json has no description of status %s", status)
		}
		responses[status] = map[string]any{"description": desc}
	}
	return responses, nil
}

// describeResponse returns a copy of the answer resp with status, given the
// headers and Error body every such answer of rt carries.
func describeResponse(rt route, status string, resp, deprecationHeaders map[string]any) map[string]any {
	resp = maps.Clone(resp)
	headers, _ := resp["headers"].(map[string]any)
	headers = maps.Clone(headers)
	if headers == nil {
		headers = map[string]any{}
	}
	headers["X-Request-Id"] = ref("#/components/headers/X-Request-Id")
	switch status {
	case "401", "403":
		if !rt.public {
			headers["WWW-Authenticate"] = ref("#/components/headers/WWW-Authenticate")
		}
	case "405":
		headers["Allow"] = ref("#/components/headers/Allow")
	}
	if status != "405" { // a 405 answers for the path, not for this operation
		maps.Copy(headers, deprecationHeaders)
	}
	if !rt.public && status != "401" && status != "405" { // answers past the key check
		headers["RateLimit-Policy"] = ref("#/components/headers/RateLimit-Policy")
		headers["RateLimit"] = ref("#/components/headers/RateLimit")
	}
	if status == "429" {
		headers["Retry-After"] = ref("#/components/headers/Retry-After")
	}
	resp["headers"] = headers
	if code, _ := strconv.Atoi(status); code >= 400 && resp["content"] == nil {
		resp["content"] = map[string]any{"application/json": map[string]any{"schema": ref("#/components/schemas/Error")}}
	}
	return resp
}

// headOperation describes the HEAD that every GET route answers: the same
// statuses and headers, no body.
func headOperation(get map[string]any) map[string]any {
	head := maps.Clone(get)
	head["operationId"] = fmt.Sprint(get["operationId"], "Head")
	head["summary"] = fmt.Sprint(get["summary"], " (headers only)")
	head["description"] = "The same answer as the GET, without its body."
	responses := maps.Clone(get["responses"].(map[string]any))
	for status, r := range responses {
		resp := maps.Clone(r.(map[string]any))
		delete(resp, "content")
		responses[status] = resp
	}
	head["responses"] = responses
	return head
}

func ref(pointer string) map[string]any { return map[string]any{"$ref": pointer} }

// configuredHeader describes a header whose value comes from the
// configuration: this document gives today's value, which may change.
func configuredHeader(description, value string) map[string]any {
	return map[string]any{
		"description": fmt.Sprintf("%s Configured value: `%s`.", description, value),
		"required":    true,
		"schema":      map[string]any{"type": "string"},
		"example":     value,
	}
}
