package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/openapi/openapitest"
)

// Tests of GET /docs (docs/api.md, "Documentation for people"): the page
// through the real mux, the page against the document it is made from, and
// the page in a real browser.

// getDocsPage gets /docs without a key and returns the answer.
func getDocsPage(t *testing.T, env *testEnv) *httptest.ResponseRecorder {
	t.Helper()
	rec := env.do(t, request{method: "GET", path: "/docs", header: map[string]string{}})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /docs without a key: got %d, want 200; body %.300s", rec.Code, rec.Body)
	}
	return rec
}

// articleOf returns the entry of the page that holds the element whose id
// is id: a HEAD's id is inside its GET's entry.
func articleOf(t *testing.T, page, id string) string {
	t.Helper()
	at := strings.Index(page, ` id="`+id+`"`)
	if at < 0 {
		t.Fatalf("the page has no element with id %q", id)
	}
	start := strings.LastIndex(page[:at], "<article")
	end := strings.Index(page[at:], "</article>")
	if start < 0 || end < 0 {
		t.Fatalf("id %q is not inside an entry", id)
	}
	return page[start : at+end]
}

// Every operation of the document is on the page, HEAD ones included, with
// its method and path, summary, marks, every error status with the codes
// its description names (at the status errors.go gives them), and a curl
// example for each method.
func TestDocsPageShowsEveryOperation(t *testing.T) {
	t.Parallel()
	dep := deprecation{at: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), sunset: time.Date(2027, 8, 9, 10, 11, 12, 0, time.UTC)}
	env := newTestEnv(t, withPets(dep))
	page := getDocsPage(t, env).Body.String()
	ops := documentedOperations(t, fetchDocument(t, env))
	if len(ops) < 10 {
		t.Fatalf("only %d operations documented", len(ops))
	}
	for key, op := range ops {
		method, path, _ := strings.Cut(key, " ")
		id, _ := op["operationId"].(string)
		entry := articleOf(t, page, id)
		text := html.UnescapeString(entry)
		if !strings.Contains(entry, `<span class="badge m-`+method+`">`+method+`</span>`) || !strings.Contains(text, `<code class="path">`+path+`</code>`) {
			t.Errorf("%s (%s): its entry does not show the method and the path", key, id)
		}
		if !strings.Contains(text, "<code>"+id+"</code>") {
			t.Errorf("%s: operationId %s is not named", key, id)
		}
		if summary, _ := op["summary"].(string); method != "HEAD" && !strings.Contains(text, summary) {
			t.Errorf("%s: summary %q not shown", key, summary)
		}
		checkDocsMarks(t, key, op, entry)
		checkDocsErrors(t, key, op, entry)
		checkDocsCurl(t, key, op, text)
	}
	entry := html.UnescapeString(articleOf(t, page, "listCategories"))
	if !strings.Contains(entry, `GET</span><span class="bar">|</span><span class="badge m-HEAD">HEAD`) {
		t.Errorf("GET and HEAD /v1/categories do not share one entry as GET | HEAD")
	}
	if !strings.Contains(articleOf(t, page, "getPet"), "Mon, 9 August 2027, 10:11:12 UTC") {
		t.Errorf("the deprecated operation does not give its sunset date")
	}
}

// checkDocsMarks checks the stability, deprecation and key marks of an entry.
func checkDocsMarks(t *testing.T, key string, op map[string]any, entry string) {
	t.Helper()
	if s, _ := op["x-stability"].(string); s != "" && !strings.Contains(entry, `<span class="mark stability">`+s+`</span>`) {
		t.Errorf("%s: stability %q not marked", key, s)
	}
	if deprecated := strings.Contains(entry, `<span class="mark deprecated">deprecated</span>`); deprecated != (op["deprecated"] == true) {
		t.Errorf("%s: marked deprecated = %v, documented deprecated = %v", key, deprecated, op["deprecated"])
	}
	security, own := op["security"]
	public := own && len(security.([]any)) == 0
	if marked := strings.Contains(entry, `<span class="mark public">no key</span>`); marked != public {
		t.Errorf("%s: marked as needing no key = %v, documented = %v", key, marked, public)
	}
}

// checkDocsErrors checks that every error status of op is in its entry with
// each code its description names, and that each such code is one of
// errors.go answered with that status.
func checkDocsErrors(t *testing.T, key string, op map[string]any, entry string) {
	t.Helper()
	responses, _ := op["responses"].(map[string]any)
	for status, r := range responses {
		code, _ := strconv.Atoi(status)
		row := `<span class="status s` + status[:1] + `">` + status + `</span>`
		if !strings.Contains(entry, row) {
			t.Errorf("%s: status %s not shown", key, status)
			continue
		}
		if code < 400 {
			continue
		}
		desc, _ := openapitest.At(r, "description").(string)
		named := 0
		for c, s := range statusOf {
			if !strings.Contains(desc, "`"+c+"`") {
				continue
			}
			named++
			if s != code {
				t.Errorf("%s %s: the document names code %s, which errors.go answers with %d", key, status, c, s)
			}
			if !strings.Contains(entry, `<a href="#code-`+c+`"><code>`+c+`</code></a>`) {
				t.Errorf("%s %s: code %s not shown", key, status, c)
			}
		}
		if named == 0 {
			t.Errorf("%s %s: no error code named for this status", key, status)
		}
	}
}

// checkDocsCurl checks an entry's curl example for the method of op.
func checkDocsCurl(t *testing.T, key string, op map[string]any, text string) {
	t.Helper()
	method, path, _ := strings.Cut(key, " ")
	examples := regexp.MustCompile(`(?s)<pre class="curl"><code>(.*?)</code></pre>`).FindStringSubmatch(text)
	if examples == nil {
		t.Errorf("%s: no curl example", key)
		return
	}
	want := map[string]string{"GET": "curl -s ", "HEAD": "curl -s -I ", "POST": "curl -s -X POST "}[method]
	base := "http://localhost:8080"
	if strings.HasPrefix(path, "/v1/") {
		base += "/v1"
		path = strings.TrimPrefix(path, "/v1")
	}
	path = strings.NewReplacer("{id}", "1", "{petId}", "1").Replace(path)
	found := false
	for _, line := range strings.Split(strings.ReplaceAll(examples[1], "\\\n", ""), "\n") {
		if strings.HasPrefix(line, want) && strings.HasSuffix(line, " "+base+path) {
			found = true
			if security, own := op["security"]; !own || len(security.([]any)) > 0 {
				found = strings.Contains(line, `-H "Authorization: Bearer $PETSTORE_API_KEYS"`)
			}
			if method == "POST" {
				found = found && strings.Contains(line, `-H 'Content-Type: application/json'`) &&
					strings.Contains(line, `-d '{"name":"dog","description":"Loyal companions"}'`)
			}
		}
	}
	if !found {
		t.Errorf("%s: no curl example %q… %s with the key and body it needs in:\n%s", key, want, base+path, examples[1])
	}
}

// The page is the error table of errors.go: every code with its status.
func TestDocsPageListsEveryErrorCode(t *testing.T) {
	t.Parallel()
	page := getDocsPage(t, newTestEnv(t)).Body.String()
	for code, status := range statusOf {
		if !strings.Contains(page, `<tr id="code-`+code+`">`) {
			t.Errorf("code %s is not in the page's table of error codes (is it in the Error schema's enum?)", code)
			continue
		}
		row := regexp.MustCompile(`<tr id="code-` + code + `"><td><span class="status s\d">(\d+)</span></td>`).FindStringSubmatch(page)
		if row == nil {
			t.Errorf("code %s has no status on the page: no answer of the document names it (as `%s`)", code, code)
			continue
		}
		if row[1] != strconv.Itoa(status) {
			t.Errorf("code %s: the page gives status %s, errors.go %d", code, row[1], status)
		}
		cell := regexp.MustCompile(`<tr id="code-` + code + `">.*?<td class="ops">(.*?)</td></tr>`).FindStringSubmatch(page)
		if cell == nil || strings.TrimSpace(cell[1]) == "" {
			t.Errorf("code %s: the page does not say what answers it", code)
		}
	}
}

// The page runs nothing and loads nothing: no script, no handler
// attributes, no inline style attributes (which its policy would block),
// no link off the host; its one style element is the one the policy
// allows by hash; every link within the page finds its target and every
// link on the host answers 200.
func TestDocsPageIsSelfContained(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	rec := getDocsPage(t, env)
	page := rec.Body.String()
	for _, bad := range []string{"<script", "javascript:", " style=", "<link", "<img", "<iframe", "<object", "<embed", "@import", "url(", "<base"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if on := regexp.MustCompile(`(?i)<[^>]*\son[a-z]+=`).FindString(page); on != "" {
		t.Errorf("the page has an event handler attribute: %s", on)
	}
	checkDocsPolicy(t, rec.Header(), page)
	for _, m := range regexp.MustCompile(`\s(href|src|action|srcset|poster)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		target := html.UnescapeString(m[2])
		switch {
		case m[1] != "href":
			t.Errorf("the page loads %s=%q", m[1], target)
		case strings.HasPrefix(target, "#"):
			if !strings.Contains(page, ` id="`+target[1:]+`"`) {
				t.Errorf("link %q: no element has that id", target)
			}
		case strings.HasPrefix(target, "/") && !strings.HasPrefix(target, "//"):
			if got := env.do(t, request{method: "GET", path: target, header: map[string]string{}}).Code; got != http.StatusOK {
				t.Errorf("link %q: GET answers %d, want 200", target, got)
			}
		default:
			t.Errorf("link %q leaves the host", target)
		}
	}
	for _, doc := range []string{`href="/v1/openapi.json"`, `href="/v1/openapi-3.0.json"`} {
		if !strings.Contains(page, doc) {
			t.Errorf("the page does not link %s", doc)
		}
	}
}

// checkDocsPolicy checks the page's security headers: a policy that allows
// no script, no frame and only the page's own style element.
func checkDocsPolicy(t *testing.T, h http.Header, page string) {
	t.Helper()
	if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options: got %q, want nosniff", got)
	}
	if got := h.Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type: got %q", got)
	}
	directives := map[string]string{}
	for _, d := range strings.Split(h.Get("Content-Security-Policy"), ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllStringSubmatch(page, -1)
	if len(style) != 1 {
		t.Fatalf("the page has %d style elements, want 1", len(style))
	}
	sum := sha256.Sum256([]byte(style[0][1]))
	for name, want := range map[string]string{
		"default-src": "'none'", "frame-ancestors": "'none'", "base-uri": "'none'", "form-action": "'none'",
		"style-src": "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
	} {
		if directives[name] != want {
			t.Errorf("Content-Security-Policy %s: got %q, want %q", name, directives[name], want)
		}
	}
	if v, ok := directives["script-src"]; ok {
		t.Errorf("Content-Security-Policy allows scripts: %q", v)
	}
}

// GET and HEAD give the same headers; If-None-Match with the page's ETag is
// 304; a query, another method are the usual errors.
func TestDocsPageAnswers(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	get := getDocsPage(t, env)
	head := env.do(t, request{method: "HEAD", path: "/docs", header: map[string]string{}})
	if head.Code != http.StatusOK || head.Body.Len() != 0 { // the handler writes no body, not only the server
		t.Errorf("HEAD /docs: got %d with %d bytes, want 200 without a body", head.Code, head.Body.Len())
	}
	for _, name := range []string{"Content-Type", "Content-Length", "Etag", "Content-Security-Policy", "X-Content-Type-Options", "Cache-Control"} {
		if g, h := get.Header().Get(name), head.Header().Get(name); g == "" || g != h {
			t.Errorf("%s: GET %q, HEAD %q", name, g, h)
		}
	}
	if got, want := get.Header().Get("Content-Length"), strconv.Itoa(get.Body.Len()); got != want {
		t.Errorf("Content-Length: got %s, want %s", got, want)
	}
	etag := get.Header().Get("Etag")
	for inm, want := range map[string]int{etag: 304, "W/" + etag: 304, `"other", ` + etag: 304, `"other"`: 200} {
		rec := env.do(t, request{method: "GET", path: "/docs", header: map[string]string{"If-None-Match": inm}})
		if rec.Code != want || want == 304 && (rec.Body.Len() != 0 || rec.Header().Get("Etag") != etag) {
			t.Errorf("If-None-Match %s: got %d (%d bytes, ETag %q), want %d", inm, rec.Code, rec.Body.Len(), rec.Header().Get("Etag"), want)
		}
	}
	mustError(t, env.do(t, request{method: "GET", path: "/docs?x=1", header: map[string]string{}}), http.StatusBadRequest, codeInvalidParameter)
	rec := env.do(t, request{method: "POST", path: "/docs", header: map[string]string{}})
	mustError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed)
	if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
		t.Errorf("Allow: got %q, want GET, HEAD", got)
	}
}

// The page is made from the served document, not kept beside it: the same
// document gives the same page, a changed one a page that says the change,
// and text from the document is escaped. (internal/apidocs checks that a
// document it cannot read makes no page.)
func TestDocsPageFollowsTheDocument(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	served := getDocsPage(t, env)
	docRec := env.do(t, request{method: "GET", path: "/v1/openapi.json", header: map[string]string{}})
	same, err := newDocsPage(docRec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if string(same.body) != served.Body.String() {
		t.Fatalf("the page made from the served document is not the served page")
	}
	var doc map[string]any
	if err := json.Unmarshal(docRec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	openapitest.At(doc, "info").(map[string]any)["title"] = "Renamed <script>alert(1)</script> & Co"
	openapitest.At(doc, "paths", "/categories", "post").(map[string]any)["summary"] = "Make a category"
	delete(openapitest.At(doc, "paths").(map[string]any), "/pets/{petId}")
	changed, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	page, err := newDocsPage(changed)
	if err != nil {
		t.Fatal(err)
	}
	body := string(page.body)
	for _, want := range []string{"Renamed &lt;script&gt;alert(1)&lt;/script&gt; &amp; Co", "Make a category"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page of a changed document does not say %q", want)
		}
	}
	for _, gone := range []string{"<script", "Create a category", "/v1/pets/{petId}", `id="getPet"`} {
		if strings.Contains(body, gone) {
			t.Errorf("the page of a changed document still holds %q", gone)
		}
	}
	if page.etag[0] == same.etag[0] {
		t.Errorf("a changed page kept the ETag %s", page.etag[0])
	}
}

// In a real browser the page shows every operation, runs no script (its
// policy would block one), is styled (the policy allows its style) and
// makes a screenshot of the asked size.
func TestDocsPageInChromium(t *testing.T) {
	t.Parallel()
	bin := needChromium(t)
	env := newTestEnv(t)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()
	dom := html.UnescapeString(chromiumDumpDOM(t, bin, srv.URL+"/docs", 5*time.Second))
	for key, op := range documentedOperations(t, fetchDocument(t, env)) {
		method, path, _ := strings.Cut(key, " ")
		entry := articleOf(t, dom, op["operationId"].(string))
		if !strings.Contains(entry, ">"+method+"<") || !strings.Contains(entry, ">"+path+"<") || !strings.Contains(entry, ">"+op["operationId"].(string)+"<") {
			t.Errorf("%s: the browser's DOM does not name it (%s)", key, op["operationId"])
		}
	}
	if strings.Contains(dom, "<script") {
		t.Errorf("the browser's DOM holds a script")
	}
	shot := filepath.Join(t.TempDir(), "docs.png")
	chromiumScreenshot(t, bin, srv.URL+"/docs", shot, 1280, 900)
	checkStyled(t, shot)
}

// The page fits the width of the window it is shown in, from a phone's to
// a wide screen's: nothing (a long list of codes, a path, a table) makes it
// scroll sideways. Chromium shows it in frames of each width; a probe page
// on the same origin measures each frame's scroll width. Only the policy
// that forbids framing the page is left off for the probe.
func TestDocsPageFitsEveryWidthInChromium(t *testing.T) {
	t.Parallel()
	bin := needChromium(t)
	env := newTestEnv(t)
	widths := []int{360, 412, 768, 1024, 1280, 1440, 1920}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /probe", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html><head><title>probe</title></head><body style="margin:0">
<pre id="result">pending</pre><div id="frames"></div>
<script>
const widths = %s, out = [];
let left = widths.length;
for (const w of widths) {
  const f = document.createElement("iframe");
  f.style.cssText = "display:block;border:0;height:700px;width:" + w + "px";
  f.onload = () => {
    out.push([w, f.contentDocument.documentElement.scrollWidth, f.contentDocument.documentElement.clientWidth].join(" "));
    if (--left === 0) document.getElementById("result").textContent = "measured\n" + out.join("\n");
  };
  f.src = "/docs";
  document.getElementById("frames").appendChild(f);
}
</script></body></html>`, strings.ReplaceAll(fmt.Sprint(widths), " ", ","))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		env.handler.ServeHTTP(rec, r)
		maps.Copy(w.Header(), rec.Header())
		w.Header().Del("Content-Security-Policy")
		w.Header().Del("X-Frame-Options")
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dom := chromiumDumpDOM(t, bin, srv.URL+"/probe", 10*time.Second)
	_, result, _ := strings.Cut(dom, `<pre id="result">`)
	result, _, _ = strings.Cut(result, "</pre>")
	lines := strings.Split(strings.TrimSpace(result), "\n")
	if lines[0] != "measured" || len(lines) != len(widths)+1 {
		t.Fatalf("the probe did not measure every frame: %q", result)
	}
	for _, l := range lines[1:] {
		var width, scroll, client int
		if _, err := fmt.Sscan(l, &width, &scroll, &client); err != nil {
			t.Fatalf("probe line %q: %v", l, err)
		}
		if scroll > client {
			t.Errorf("at %d px the page is %d px wide (its window %d px): it scrolls sideways", width, scroll, client)
		}
	}
}

// checkStyled checks that the table of contents of the screenshot has the
// page's light background (#f6f8fa), which only its style element gives.
func checkStyled(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	r, g, b, _ := img.At(8, 850).RGBA()
	if got := []uint32{r >> 8, g >> 8, b >> 8}; !slices.Equal(got, []uint32{0xf6, 0xf8, 0xfa}) {
		t.Errorf("the table of contents is colour %x, want f6f8fa: is the style element blocked?", got)
	}
}

// The policy the page is served with blocks a script in a real browser:
// a page with one runs it when served plainly, and runs nothing when served
// as the docs page is.
func TestDocsPolicyBlocksScriptsInChromium(t *testing.T) {
	t.Parallel()
	bin := needChromium(t)
	docs, err := newDocsPage(fetchDocumentBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	canary := *docs
	canary.body = []byte(`<!DOCTYPE html><html><head><title>t</title></head><body><p id="p">static</p>` +
		`<script>document.getElementById("p").textContent = ["script", "ran"].join(" ")</script></body></html>`)
	canary.length = []string{strconv.Itoa(len(canary.body))}
	plain := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(canary.body)
	})
	for _, c := range []struct {
		name    string
		handler http.Handler
		want    string
	}{
		{"served plainly", plain, `<p id="p">script ran</p>`},
		{"served as the docs page", handleDocsPage(&canary), `<p id="p">static</p>`},
	} {
		srv := httptest.NewServer(c.handler)
		dom := chromiumDumpDOM(t, bin, srv.URL+"/docs", 3*time.Second)
		srv.Close()
		if !strings.Contains(dom, c.want) {
			t.Errorf("%s: the DOM does not hold %s:\n%s", c.name, c.want, dom)
		}
	}
}

// fetchDocumentBytes returns the served OpenAPI 3.1 document.
func fetchDocumentBytes(t *testing.T) []byte {
	t.Helper()
	rec := newTestEnv(t).do(t, request{method: "GET", path: "/v1/openapi.json", header: map[string]string{}})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d", rec.Code)
	}
	return rec.Body.Bytes()
}

// BenchmarkDocsPage measures the docs page: rendered once at start from the
// served document (render), and served (serve, through the whole handler).
//
//	go test -run '^$' -bench 'BenchmarkDocsPage' -benchmem .
func BenchmarkDocsPage(b *testing.B) {
	_, doc, err := newServer(deps{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			page, err := newDocsPage(doc)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(page.body)))
		}
	})
	b.Run("serve", func(b *testing.B) {
		env := benchEnv(b, 0)
		serveBench(b, env.handler, httptest.NewRequest("GET", "/docs", nil), http.StatusOK)
	})
}
