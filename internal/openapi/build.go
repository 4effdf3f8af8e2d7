package openapi

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"petstore/internal/rawjson"
)

// staticJSON holds the parts of the document that the operations given to
// Build cannot say: schemas, servers, wording, and each operation's own
// responses.
//
//go:embed static.json
var staticJSON []byte

// staticFile names static.json in Build's errors, for whoever must change it.
const staticFile = "internal/openapi/static.json"

// apiBase is the path segment the documented servers end with: the document's
// paths are relative to it, and an operation outside it (/healthz) is
// documented with servers at the origin.
const apiBase = "/v1"

// staticParts is the shape of static.json.
type staticParts struct {
	Document      map[string]any            `json:"document"`      // the document, without paths
	OriginServers []any                     `json:"originServers"` // servers of operations outside apiBase
	Errors        map[string]string         `json:"errors"`        // status → description of the answers middleware gives
	Operations    map[string]map[string]any `json:"operations"`    // operationId → summary, parameters, own responses …
}

// Operation is what the service says of one of its operations; static.json
// says the rest.
type Operation struct {
	Method      string       // "GET", "POST" …
	Path        string       // from the origin, base path included: "/v1/categories/{id}"
	OperationID string       // names its description in static.json
	Head        bool         // answers HEAD too, as a GET does: documented as an operation of its own
	Public      bool         // needs no API key
	Scope       string       // the key scope it needs, when not public
	Stability   string       // "experimental", "beta" or ""
	Deprecation *Deprecation // nil: not deprecated
}

// Deprecation says when an operation was deprecated and when it goes away,
// and the header values every answer of it carries to say so.
type Deprecation struct {
	At, Sunset        time.Time
	DeprecationHeader string // the Deprecation value (RFC 9745)
	SunsetHeader      string // the Sunset value (RFC 8594)
}

// Build returns the OpenAPI 3.1 document of ops, indented. Everything an
// Operation says (path, method, auth, deprecation, stability) comes from
// ops; static.json must describe exactly their operations. errorStatus maps
// every error code an answer can carry to its HTTP status.
func Build(ops []Operation, errorStatus map[string]int) ([]byte, error) {
	var st staticParts
	if err := json.Unmarshal(staticJSON, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", staticFile, err)
	}
	paths, err := describePaths(ops, st)
	if err != nil {
		return nil, err
	}
	doc := st.Document
	if err := describeErrorCodes(doc, errorStatus); err != nil {
		return nil, err
	}
	doc["security"] = []any{map[string]any{"bearerAuth": []any{}}}
	doc["paths"] = paths
	return marshalDocument(doc)
}

// describePaths returns the document's path items: each operation of ops
// described, under its path relative to apiBase.
func describePaths(ops []Operation, st staticParts) (map[string]map[string]any, error) {
	paths := map[string]map[string]any{}
	described := map[string]bool{}
	for _, o := range ops {
		static, ok := st.Operations[o.OperationID]
		if !ok {
			return nil, fmt.Errorf("%s does not describe %s %s (operation %q)", staticFile, o.Method, o.Path, o.OperationID)
		}
		if described[o.OperationID] {
			return nil, fmt.Errorf("operation %q is given twice", o.OperationID)
		}
		described[o.OperationID] = true
		op, err := describeOperation(o, static, st.Errors)
		if err != nil {
			return nil, err
		}
		docPath, inBase := strings.CutPrefix(o.Path, apiBase)
		item := paths[docPath]
		if item == nil {
			item = map[string]any{}
			if !inBase {
				docPath = o.Path
				item["servers"] = st.OriginServers
			}
			paths[docPath] = item
		}
		item[strings.ToLower(o.Method)] = op
		if o.Head {
			item["head"] = headOperation(op)
		}
	}
	for id := range st.Operations {
		if !described[id] {
			return nil, fmt.Errorf("%s describes operation %q, which no operation given is", staticFile, id)
		}
	}
	return paths, nil
}

// describeErrorCodes fills in the Error schema's code from errorStatus, the
// service's one table of errors: x-extensible-enum, the codes known now
// (by status), and x-status, the status of each. Not enum: the set is open,
// and a generated client must accept a code a later version adds.
func describeErrorCodes(doc map[string]any, errorStatus map[string]int) error {
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	errSchema, _ := schemas["Error"].(map[string]any)
	props, _ := errSchema["properties"].(map[string]any)
	code, ok := props["code"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s has no Error schema with a code property", staticFile)
	}
	codes := slices.SortedFunc(maps.Keys(errorStatus), func(a, b string) int {
		return cmp.Or(cmp.Compare(errorStatus[a], errorStatus[b]), strings.Compare(a, b))
	})
	enum := make([]any, len(codes))
	statuses := make(map[string]any, len(codes))
	for i, c := range codes {
		enum[i], statuses[c] = c, errorStatus[c]
	}
	code["x-extensible-enum"], code["x-status"] = enum, statuses
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
// o implies: the answers the service's middleware gives it (401, 410, 500;
// 405 from its path), the headers of every answer, its security, its
// deprecation and its stability.
func describeOperation(o Operation, static map[string]any, errs map[string]string) (map[string]any, error) {
	op := maps.Clone(static)
	op["operationId"] = o.OperationID
	params, _ := op["parameters"].([]any)
	op["parameters"] = append(slices.Clone(params), ref("#/components/parameters/RequestId"))
	if o.Public {
		op["security"] = []any{}
	} else {
		// OpenAPI 3.1 lets a requirement of a bearer scheme name roles:
		// here the key scope the operation needs.
		op["security"] = []any{map[string]any{"bearerAuth": []any{o.Scope}}}
	}
	if o.Stability != "" {
		op["x-stability"] = o.Stability
	}
	var deprecationHeaders map[string]any
	if dep := o.Deprecation; dep != nil {
		deprecationHeaders = describeDeprecation(op, dep)
	}
	responses, err := impliedResponses(o, static, errs)
	if err != nil {
		return nil, err
	}
	for status, r := range responses {
		resp, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("operation %q: response %s is not an object", o.OperationID, status)
		}
		responses[status] = describeResponse(o, status, resp, deprecationHeaders)
	}
	op["responses"] = responses
	return op, nil
}

// describeDeprecation marks op deprecated as of dep, says when in its
// description, and returns the headers its answers carry for it.
func describeDeprecation(op map[string]any, dep *Deprecation) map[string]any {
	op["deprecated"] = true
	op["x-sunset"] = dep.Sunset.UTC().Format(time.RFC3339)
	desc, _ := op["description"].(string)
	op["description"] = strings.TrimSpace(fmt.Sprintf("%s\n\nDeprecated as of %s; its sunset is %s, from which on it answers 410 `gone`.",
		desc, dep.At.UTC().Format(time.RFC3339), dep.Sunset.UTC().Format(time.RFC3339)))
	return map[string]any{
		"Deprecation": configuredHeader("When the operation was deprecated (RFC 9745): `@` and Unix seconds.", dep.DeprecationHeader),
		"Sunset":      configuredHeader("When the operation goes away (RFC 8594); from then on it answers 410.", dep.SunsetHeader),
	}
}

// impliedResponses returns the operation's own responses and those the
// service's middleware gives it (400, 405 and 500 always; 401, 403 and 429 past
// the key check; 410 once deprecated), described from errs where the
// operation does not word them itself. The 403 of a key without the scope
// names the scope and comes before the operation's own 403, if it has one.
func impliedResponses(o Operation, static map[string]any, errs map[string]string) (map[string]any, error) {
	own, _ := static["responses"].(map[string]any)
	responses := maps.Clone(own)
	implied := []string{"400", "405", "500"} // 400: every operation checks its query (docs/api.md, "Pages and look-up by name")
	if !o.Public {
		implied = append(implied, "401", "429")
	}
	if o.Deprecation != nil {
		implied = append(implied, "410")
	}
	if !o.Public {
		scoped, ok := errs["403"]
		if !ok {
			return nil, fmt.Errorf("%s has no description of status 403", staticFile)
		}
		scoped = strings.ReplaceAll(scoped, "{scope}", o.Scope)
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
			return nil, fmt.Errorf("%s has no description of status %s", staticFile, status)
		}
		responses[status] = map[string]any{"description": desc}
	}
	return responses, nil
}

// describeResponse returns a copy of the answer resp with status, given the
// headers and Error body every such answer of o carries.
func describeResponse(o Operation, status string, resp, deprecationHeaders map[string]any) map[string]any {
	resp = maps.Clone(resp)
	headers, _ := resp["headers"].(map[string]any)
	headers = maps.Clone(headers)
	if headers == nil {
		headers = map[string]any{}
	}
	headers["X-Request-Id"] = ref("#/components/headers/X-Request-Id")
	switch status {
	case "401", "403":
		if !o.Public {
			headers["WWW-Authenticate"] = ref("#/components/headers/WWW-Authenticate")
		}
	case "405":
		headers["Allow"] = ref("#/components/headers/Allow")
	}
	if status != "405" { // a 405 answers for the path, not for this operation
		maps.Copy(headers, deprecationHeaders)
	}
	if !o.Public && status != "401" && status != "405" { // answers past the key check
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

// headOperation describes the HEAD that a GET answers too: the same
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
