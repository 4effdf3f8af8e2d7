package apidocs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// docsView is what docs.html.tmpl shows: an OpenAPI 3.1 document read for
// people. Everything in it comes from the document.
type docsView struct {
	Title, Version, Summary string
	Description             []template.HTML // paragraphs
	Servers                 []docsServer
	Auth                    []docsAuth
	PublicOps               []docsOpRef // operations that need no key
	CommonParams            []docsField // parameters every operation takes
	CommonHeaders           []string    // headers every response carries
	Groups                  []docsGroup
	Errors                  []docsErrorCode
	Schemas                 []docsSchema
	Headers                 []docsHeader
	CSS                     template.CSS
}

type docsServer struct{ URL, Description string }

// docsAuth is a security scheme: the header a request sends.
type docsAuth struct {
	Name, Header string
	Description  []template.HTML
}

// docsGroup is the operations of one tag.
type docsGroup struct {
	Tag         string
	Description template.HTML
	Ops         []*docsOp
}

// docsOp is one entry of the page: an operation, or a GET and its HEAD.
type docsOp struct {
	Anchor      string   // the id of its first operation
	IDs         []string // operation ids, a GET's HEAD included
	Methods     []string
	Path        string // from the server's root, base path included
	Summary     string
	Description []template.HTML
	Stability   string
	Deprecated  bool
	Sunset      string // "" unless deprecated with a sunset
	Public      bool
	Params      []docsField
	Request     *docsBody
	Responses   []docsResponse
	Curl        []string // one command per method
}

type docsOpRef struct{ Anchor, Label string }

// docsField is a row of a parameter or field table.
type docsField struct {
	Name, In    string
	Type        docsType
	Required    bool
	Bounds      []template.HTML
	Description template.HTML
}

// docsType names a schema's type; Schema names the component it refers to.
type docsType struct{ Text, Schema string }

type docsBody struct {
	MediaType   string
	Type        docsType
	Description template.HTML
	Fields      []docsField // of the object the body is, or holds
}

type docsResponse struct {
	Status, Class string
	Description   template.HTML
	Codes         []string // error codes of the answer
	Headers       []string
	Body          *docsBody
}

type docsErrorCode struct {
	Code, Status string
	Ops          []docsOpRef
	Elsewhere    string // what answers it when no operation of the document does
}

type docsSchema struct {
	Name        string
	Type        docsType
	Description template.HTML
	Fields      []docsField
	Bounds      []template.HTML
}

type docsHeader struct {
	Name        string
	Description template.HTML
}

// oaDoc is a decoded OpenAPI document, read through the helpers below.
type oaDoc map[string]any

func obj(v any) map[string]any                  { m, _ := v.(map[string]any); return m }
func str(v any) string                          { s, _ := v.(string); return s }
func list(v any) []any                          { l, _ := v.([]any); return l }
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// resolve follows v's $ref, if any, within the document.
func (d oaDoc) resolve(v any) map[string]any {
	m := obj(v)
	for range 10 { // a chain of references, bounded
		ref := str(m["$ref"])
		if ref == "" {
			return m
		}
		m = obj(d.pointer(ref))
	}
	return m
}

// pointer returns what a local JSON pointer ("#/components/schemas/X") names.
func (d oaDoc) pointer(ref string) any {
	var v any = map[string]any(d)
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		v = obj(v)[part]
	}
	return v
}

// refName returns the component name v refers to, or "".
func refName(v any) string {
	ref := str(obj(v)["$ref"])
	return ref[strings.LastIndexByte(ref, '/')+1:]
}

// docsViewOf reads the OpenAPI 3.1 document doc into the page's view.
func docsViewOf(doc []byte) (*docsView, error) {
	var d oaDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("the OpenAPI document: %w", err)
	}
	if v := str(d["openapi"]); !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf("the OpenAPI document is version %q, not 3.1", v)
	}
	info := obj(d["info"])
	v := &docsView{
		Title:       str(info["title"]),
		Version:     str(info["version"]),
		Summary:     str(info["summary"]),
		Description: paragraphs(str(info["description"])),
		Auth:        d.auth(),
	}
	for _, s := range list(d["servers"]) {
		v.Servers = append(v.Servers, docsServer{URL: serverURL(obj(s)), Description: str(obj(s)["description"])})
	}
	ops, err := d.operations()
	if err != nil {
		return nil, err
	}
	v.CommonParams, v.CommonHeaders = d.common(ops)
	v.Groups = d.groups(ops, v.CommonParams, v.CommonHeaders)
	for _, g := range v.Groups {
		for _, op := range g.Ops {
			if op.Public {
				v.PublicOps = append(v.PublicOps, docsOpRef{op.Anchor, strings.Join(op.Methods, " | ") + " " + op.Path})
			}
		}
	}
	v.Errors = errorCodes(d, v.Groups)
	v.Schemas = d.schemas()
	v.Headers = d.headers(ops)
	return v, nil
}

// headers describes every response header the document names, once: the
// components' own, then those an operation describes in place.
func (d oaDoc) headers(ops []oaOperation) []docsHeader {
	described := map[string]template.HTML{}
	for name, h := range obj(obj(d["components"])["headers"]) {
		described[name] = inline(str(obj(h)["description"]))
	}
	for _, o := range ops {
		for _, r := range obj(o.op["responses"]) {
			for name, h := range obj(d.resolve(r)["headers"]) {
				if _, ok := described[name]; !ok {
					described[name] = inline(str(d.resolve(h)["description"]))
				}
			}
		}
	}
	var out []docsHeader
	for _, name := range sortedKeys(described) {
		out = append(out, docsHeader{name, described[name]})
	}
	return out
}

// serverURL returns a server's URL with its variables at their defaults.
func serverURL(s map[string]any) string {
	u := str(s["url"])
	for name, v := range obj(s["variables"]) {
		u = strings.ReplaceAll(u, "{"+name+"}", str(obj(v)["default"]))
	}
	return strings.TrimSuffix(u, "/")
}

// auth describes the document's security schemes.
func (d oaDoc) auth() []docsAuth {
	schemes := obj(obj(d["components"])["securitySchemes"])
	var out []docsAuth
	for _, name := range sortedKeys(schemes) {
		s := obj(schemes[name])
		a := docsAuth{Name: name, Description: paragraphs(str(s["description"]))}
		switch {
		case str(s["type"]) == "http" && strings.EqualFold(str(s["scheme"]), "bearer"):
			a.Header = "Authorization: Bearer <key>"
		case str(s["type"]) == "http":
			a.Header = "Authorization: " + str(s["scheme"]) + " …"
		case str(s["type"]) == "apiKey":
			a.Header = str(s["name"]) + " (" + str(s["in"]) + ")"
		}
		out = append(out, a)
	}
	return out
}

// oaOperation is one operation of the document where the page needs it.
type oaOperation struct {
	method, path, fullPath, server string
	op                             map[string]any
	public                         bool
}

// docsMethods orders the methods of a path item.
var docsMethods = []string{"get", "head", "post", "put", "patch", "delete", "options", "trace"}

// operations lists the document's operations by path, then method.
func (d oaDoc) operations() ([]oaOperation, error) {
	servers := list(d["servers"])
	globalKey := len(list(d["security"])) > 0
	var ops []oaOperation
	paths := obj(d["paths"])
	for _, p := range sortedKeys(paths) {
		item := obj(paths[p])
		srv := servers
		if s := list(item["servers"]); len(s) > 0 {
			srv = s
		}
		if len(srv) == 0 {
			return nil, fmt.Errorf("the OpenAPI document gives no server for %s", p)
		}
		base := serverURL(obj(srv[0]))
		u, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("the server of %s: %w", p, err)
		}
		for _, m := range docsMethods {
			op := obj(item[m])
			if op == nil {
				continue
			}
			security, own := op["security"]
			ops = append(ops, oaOperation{
				method: strings.ToUpper(m), path: p, fullPath: u.Path + p, server: base, op: op,
				public: own && len(list(security)) == 0 || !own && !globalKey,
			})
		}
	}
	return ops, nil
}

// common returns the parameters every operation takes and the headers
// every response carries: the page says them once, not in every entry.
func (d oaDoc) common(ops []oaOperation) ([]docsField, []string) {
	params, headers := map[string]int{}, map[string]int{}
	responses := 0
	for _, o := range ops {
		for _, p := range list(o.op["parameters"]) {
			params[str(obj(p)["$ref"])]++
		}
		for _, r := range obj(o.op["responses"]) {
			responses++
			for h := range obj(d.resolve(r)["headers"]) {
				headers[h]++
			}
		}
	}
	var commonParams []docsField
	for _, ref := range sortedKeys(params) {
		if ref != "" && params[ref] == len(ops) {
			commonParams = append(commonParams, d.param(d.resolve(map[string]any{"$ref": ref})))
		}
	}
	var commonHeaders []string
	for _, h := range sortedKeys(headers) {
		if headers[h] == responses {
			commonHeaders = append(commonHeaders, h)
		}
	}
	return commonParams, commonHeaders
}

// groups puts the operations in entries under their first tag, in the
// order of the document's tags; a HEAD shares the entry of its GET.
func (d oaDoc) groups(ops []oaOperation, commonParams []docsField, commonHeaders []string) []docsGroup {
	tagDesc := map[string]template.HTML{}
	order := []string{}
	for _, t := range list(d["tags"]) {
		name := str(obj(t)["name"])
		tagDesc[name] = inline(str(obj(t)["description"]))
		order = append(order, name)
	}
	byTag := map[string][]*docsOp{}
	var last *docsOp
	for _, o := range ops {
		if last != nil && o.method == "HEAD" && last.Path == o.fullPath && slices.Equal(last.Methods, []string{"GET"}) {
			last.Methods = append(last.Methods, "HEAD")
			last.IDs = append(last.IDs, str(o.op["operationId"]))
			last.Curl = append(last.Curl, curlExample(d, o))
			continue
		}
		last = d.entry(o, commonParams, commonHeaders)
		tag := ""
		if tags := list(o.op["tags"]); len(tags) > 0 {
			tag = str(tags[0])
		}
		if !slices.Contains(order, tag) {
			order = append(order, tag)
		}
		byTag[tag] = append(byTag[tag], last)
	}
	var out []docsGroup
	for _, tag := range order {
		if len(byTag[tag]) > 0 {
			out = append(out, docsGroup{Tag: cmp.Or(tag, "other"), Description: tagDesc[tag], Ops: byTag[tag]})
		}
	}
	return out
}

// entry makes the page's entry of one operation.
func (d oaDoc) entry(o oaOperation, commonParams []docsField, commonHeaders []string) *docsOp {
	id := str(o.op["operationId"])
	e := &docsOp{
		Anchor: id, IDs: []string{id}, Methods: []string{o.method}, Path: o.fullPath,
		Summary:     str(o.op["summary"]),
		Description: paragraphs(str(o.op["description"])),
		Stability:   str(o.op["x-stability"]),
		Deprecated:  o.op["deprecated"] == true,
		Public:      o.public,
		Curl:        []string{curlExample(d, o)},
	}
	if sunset, err := time.Parse(time.RFC3339, str(o.op["x-sunset"])); err == nil {
		e.Sunset = sunset.UTC().Format("Mon, 2 January 2006, 15:04:05 UTC")
	}
	for _, p := range list(o.op["parameters"]) {
		if f := d.param(d.resolve(p)); !slices.ContainsFunc(commonParams, f.same) {
			e.Params = append(e.Params, f)
		}
	}
	if rb := d.resolve(o.op["requestBody"]); rb != nil {
		e.Request = d.body(rb)
	}
	responses := obj(o.op["responses"])
	for _, status := range sortedKeys(responses) {
		e.Responses = append(e.Responses, d.response(status, d.resolve(responses[status]), commonHeaders))
	}
	return e
}

// param makes the table row of a parameter object.
func (d oaDoc) param(p map[string]any) docsField {
	s := d.resolve(p["schema"])
	return docsField{
		Name: str(p["name"]), In: str(p["in"]),
		Type:        d.typeOf(p["schema"]),
		Required:    p["required"] == true,
		Bounds:      bounds(s),
		Description: inline(str(p["description"])),
	}
}

// body describes a request body or a response's content: its first media
// type, and the fields of the object it is (or is an array of).
func (d oaDoc) body(b map[string]any) *docsBody {
	content := obj(b["content"])
	if len(content) == 0 {
		return nil
	}
	mt := sortedKeys(content)[0]
	schema := obj(content[mt])["schema"]
	out := &docsBody{MediaType: mt, Type: d.typeOf(schema), Description: inline(str(b["description"]))}
	s := d.resolve(schema)
	if str(s["type"]) == "array" {
		s = d.resolve(s["items"])
	}
	out.Fields = d.fields(s)
	return out
}

// fields makes the rows of an object schema's properties, required first.
func (d oaDoc) fields(s map[string]any) []docsField {
	required := list(s["required"])
	props := obj(s["properties"])
	names := sortedKeys(props)
	slices.SortStableFunc(names, func(a, b string) int {
		return cmp.Compare(boolRank(!slices.Contains(required, any(a))), boolRank(!slices.Contains(required, any(b))))
	})
	var out []docsField
	for _, name := range names {
		ps := d.resolve(props[name])
		out = append(out, docsField{
			Name: name, Type: d.typeOf(props[name]),
			Required:    slices.Contains(required, any(name)),
			Bounds:      bounds(ps),
			Description: inline(str(ps["description"])),
		})
	}
	return out
}

// same reports whether f and g are the same parameter.
func (f docsField) same(g docsField) bool { return f.Name == g.Name && f.In == g.In }

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// response makes the row of one answer; statuses from 400 on name the
// error codes their description gives.
func (d oaDoc) response(status string, r map[string]any, commonHeaders []string) docsResponse {
	out := docsResponse{Status: status, Class: "s" + status[:1], Description: inline(str(r["description"]))}
	for _, h := range sortedKeys(obj(r["headers"])) {
		if !slices.Contains(commonHeaders, h) {
			out.Headers = append(out.Headers, h)
		}
	}
	if status >= "400" {
		out.Codes = codesIn(str(r["description"]), d.errorCodeEnum())
	} else {
		out.Body = d.body(r)
	}
	return out
}

// errorCodeEnum returns the codes the document's Error schema lists.
func (d oaDoc) errorCodeEnum() []any {
	errSchema := obj(obj(obj(d["components"])["schemas"])["Error"])
	return list(d.resolve(obj(errSchema["properties"])["code"])["x-extensible-enum"])
}

// errorCodeStatus returns the x-status of the Error schema's code: the
// HTTP status of each code.
func (d oaDoc) errorCodeStatus() map[string]any {
	errSchema := obj(obj(obj(d["components"])["schemas"])["Error"])
	return obj(d.resolve(obj(errSchema["properties"])["code"])["x-status"])
}

// errorCodeElsewhere returns the x-answered-elsewhere of the Error
// schema's code: what answers each code no operation answers.
func (d oaDoc) errorCodeElsewhere() map[string]any {
	errSchema := obj(obj(obj(d["components"])["schemas"])["Error"])
	return obj(d.resolve(obj(errSchema["properties"])["code"])["x-answered-elsewhere"])
}

// codesIn returns the codes of enum that text quotes (`code`), in order.
func codesIn(text string, enum []any) []string {
	var out []string
	parts := strings.Split(text, "`")
	for i := 1; i < len(parts); i += 2 {
		if slices.Contains(enum, any(parts[i])) && !slices.Contains(out, parts[i]) {
			out = append(out, parts[i])
		}
	}
	return out
}

// errorCodes lists every code of the Error schema with the status that
// carries it and the operations that answer it, by status.
func errorCodes(d oaDoc, groups []docsGroup) []docsErrorCode {
	var out []docsErrorCode
	for _, c := range d.errorCodeEnum() {
		code := docsErrorCode{Code: str(c)}
		for _, g := range groups {
			for _, op := range g.Ops {
				for _, r := range op.Responses {
					if slices.Contains(r.Codes, code.Code) {
						code.Status = cmp.Or(code.Status, r.Status)
						code.Ops = append(code.Ops, docsOpRef{op.Anchor, strings.Join(op.Methods, " | ") + " " + op.Path})
						break
					}
				}
			}
		}
		if status, ok := d.errorCodeStatus()[code.Code]; ok && code.Status == "" {
			code.Status = jsonText(status) // answered outside the operations: a CORS preflight
		}
		if len(code.Ops) == 0 {
			code.Elsewhere = str(d.errorCodeElsewhere()[code.Code])
		}
		out = append(out, code)
	}
	// By status; a code without one goes last.
	slices.SortStableFunc(out, func(a, b docsErrorCode) int { return cmp.Compare(cmp.Or(a.Status, "999"), cmp.Or(b.Status, "999")) })
	return out
}

// schemas describes the document's component schemas.
func (d oaDoc) schemas() []docsSchema {
	all := obj(obj(d["components"])["schemas"])
	var out []docsSchema
	for _, name := range sortedKeys(all) {
		s := d.resolve(all[name])
		ds := docsSchema{Name: name, Type: d.typeOf(s), Description: inline(str(s["description"])), Fields: d.fields(s)}
		if ds.Fields == nil {
			ds.Bounds = bounds(s)
		}
		out = append(out, ds)
	}
	return out
}

// typeOf names the type of schema v: a component object by its name, an
// array by its items, others by type and format.
func (d oaDoc) typeOf(v any) docsType {
	if name := refName(v); name != "" && str(d.resolve(v)["type"]) == "object" {
		return docsType{Schema: name}
	}
	s := d.resolve(v)
	var text string
	switch t := s["type"].(type) {
	case string:
		text = t
	case []any:
		var names []string
		for _, n := range t {
			names = append(names, str(n))
		}
		text = strings.Join(names, " or ")
	}
	if text == "array" {
		item := d.typeOf(s["items"])
		return docsType{Text: strings.TrimSpace("array of " + item.Text), Schema: item.Schema}
	}
	if f := str(s["format"]); f != "" {
		text += " (" + f + ")"
	}
	return docsType{Text: cmp.Or(text, "any")}
}

// bounds says what a schema allows beyond its type, for people.
func bounds(s map[string]any) []template.HTML {
	var out []template.HTML
	if b := rangeOf(s, "minLength", "maxLength", " characters"); b != "" {
		out = append(out, template.HTML(template.HTMLEscapeString(b)))
	}
	if b := rangeOf(s, "minimum", "maximum", ""); b != "" {
		out = append(out, template.HTML(template.HTMLEscapeString(b)))
	}
	if b := rangeOf(s, "minItems", "maxItems", " items"); b != "" {
		out = append(out, template.HTML(template.HTMLEscapeString(b)))
	}
	if c, ok := s["const"]; ok {
		out = append(out, "always "+codeSpan(jsonText(c)))
	}
	if enum := list(s["enum"]); len(enum) > 0 {
		out = append(out, "one of "+codeList(enum))
	}
	if known := list(s["x-extensible-enum"]); len(known) > 0 {
		out = append(out, "an open set; known now: "+codeList(known))
	}
	if p := str(s["pattern"]); p != "" {
		out = append(out, "matches "+codeSpan(p))
	}
	return out
}

// codeList is values as code spans, comma-separated.
func codeList(values []any) template.HTML {
	spans := make([]string, len(values))
	for i, v := range values {
		spans[i] = string(codeSpan(jsonText(v)))
	}
	return template.HTML(strings.Join(spans, ", "))
}

// rangeOf words the bounds lo and hi of s: "1–100 characters", "at least
// 1", "at most 1000 characters".
func rangeOf(s map[string]any, lo, hi, unit string) string {
	minV, hasMin := s[lo].(float64)
	maxV, hasMax := s[hi].(float64)
	if unit != "" && (hasMax && maxV == 1 || !hasMax && minV == 1) {
		unit = strings.TrimSuffix(unit, "s") // "at least 1 character"
	}
	switch {
	case hasMin && hasMax:
		return number(minV) + "–" + number(maxV) + unit
	case hasMin:
		return "at least " + number(minV) + unit
	case hasMax:
		return "at most " + number(maxV) + unit
	}
	return ""
}

func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if s, ok := v.(string); ok && !strings.ContainsAny(s, "\"\\") {
		return s // a plain word reads better without quotes
	}
	return string(b)
}

func codeSpan(s string) template.HTML {
	return template.HTML("<code>" + template.HTMLEscapeString(s) + "</code>")
}

// paragraphs renders a description: blank lines part paragraphs.
func paragraphs(s string) []template.HTML {
	var out []template.HTML
	for _, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, inline(p))
		}
	}
	return out
}

// inline renders a line of a description: text escaped, `quoted` parts as
// code. It introduces no other markup.
func inline(s string) template.HTML {
	var b strings.Builder
	for i, part := range strings.Split(s, "`") {
		if i%2 == 1 {
			b.WriteString(string(codeSpan(part)))
		} else {
			b.WriteString(template.HTMLEscapeString(part))
		}
	}
	return template.HTML(b.String())
}

// curlExample is a command that sends the operation o to the document's
// first server, with a key when it needs one and an example body.
func curlExample(d oaDoc, o oaOperation) string {
	var b strings.Builder
	b.WriteString("curl -s")
	switch o.method {
	case "GET":
	case "HEAD":
		b.WriteString(" -I")
	default:
		b.WriteString(" -X " + o.method)
	}
	if !o.public {
		b.WriteString(` -H "Authorization: Bearer $PETSTORE_API_KEYS"`)
	}
	target := o.path
	var query []string
	for _, p := range list(o.op["parameters"]) {
		p := d.resolve(p)
		switch {
		case str(p["in"]) == "path":
			target = strings.ReplaceAll(target, "{"+str(p["name"])+"}", url.PathEscape(d.exampleOf(p)))
		case str(p["in"]) == "query" && p["required"] == true:
			query = append(query, url.QueryEscape(str(p["name"]))+"="+url.QueryEscape(d.exampleOf(p)))
		}
	}
	if len(query) > 0 {
		target += "?" + strings.Join(query, "&")
	}
	if mt, body := d.bodyExample(d.resolve(o.op["requestBody"])); body != "" {
		b.WriteString(" -H " + shellQuote("Content-Type: "+mt) + " \\\n  -d " + shellQuote(body))
	}
	b.WriteString(" " + shellQuote(o.server+target))
	return b.String()
}

// exampleOf returns an example value of a parameter.
func (d oaDoc) exampleOf(p map[string]any) string {
	s := d.resolve(p["schema"])
	for _, v := range []any{p["example"], s["example"], s["default"], s["minimum"]} {
		if v != nil {
			return jsonText(v)
		}
	}
	if ex := list(s["examples"]); len(ex) > 0 {
		return jsonText(ex[0])
	}
	return "1"
}

// bodyExample returns an example JSON body of a request body: each field's
// first example, required fields first.
func (d oaDoc) bodyExample(rb map[string]any) (mediaType, body string) {
	content := obj(rb["content"])
	if len(content) == 0 {
		return "", ""
	}
	mediaType = sortedKeys(content)[0]
	s := d.resolve(obj(content[mediaType])["schema"])
	var members []string
	for _, f := range d.fields(s) {
		ps := d.resolve(obj(s["properties"])[f.Name])
		ex := ps["example"]
		if l := list(ps["examples"]); len(l) > 0 {
			ex = l[0]
		}
		if ex == nil {
			continue
		}
		name, _ := json.Marshal(f.Name)
		value, _ := json.Marshal(ex)
		members = append(members, string(name)+":"+string(value))
	}
	return mediaType, "{" + strings.Join(members, ",") + "}"
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/:._-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
