package main

import (
	"encoding/json"
	"html"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/internal/petstoretest"
)

// corsPage is a page that calls petstore from another origin, as a browser
// application would, and writes into the page what it could read.
var corsPage = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>CORS</title></head><body><pre id="out">pending</pre>
<script>
const api = {{.API}}, auth = {"Authorization": "Bearer " + {{.Key}}};
const out = {};
function create(name) {
	return fetch(api + "/v1/categories", {method: "POST", body: JSON.stringify({name: name}),
		headers: Object.assign({"Content-Type": "application/json", "Idempotency-Key": "page-" + name}, auth)});
}
async function run() {
	try {
		let r = await create("from-a-page");
		out.create = {status: r.status, location: r.headers.get("Location"), body: await r.json(),
			requestId: r.headers.get("X-Request-Id")};
		r = await create("from-a-page");
		out.retry = {status: r.status, replayed: r.headers.get("Idempotent-Replayed")};
		r = await fetch(api + "/v1/categories?limit=1", {headers: auth});
		out.page = {status: r.status, etag: r.headers.get("ETag"), link: r.headers.get("Link"), body: await r.json()};
		r = await fetch(api + "/v1/categories?limit=1", {headers: Object.assign({"If-None-Match": out.page.etag}, auth)});
		out.notModified = {status: r.status};
		r = await create("FROM-A-PAGE ");
		out.conflict = {status: r.status, body: await r.json()};
		r = await fetch(api + "/v1/categories");
		out.noKey = {status: r.status, challenge: r.headers.get("WWW-Authenticate"), body: await r.json()};
	} catch (e) {
		out.error = String(e);
	}
	document.getElementById("out").textContent = JSON.stringify(out);
}
run();
</script></body></html>
`))

// pageSaw is what corsPage writes into its DOM.
type pageSaw struct {
	Create struct {
		Status              int
		Location, RequestID string
		Body                petstoretest.Category
	}
	Retry struct {
		Status   int
		Replayed string
	}
	Page struct {
		Status     int
		ETag, Link string
		Body       []petstoretest.Category
	}
	NotModified struct{ Status int }
	Conflict    struct {
		Status int
		Body   petstoretest.ErrorBody
	}
	NoKey struct {
		Status    int
		Challenge string
		Body      petstoretest.ErrorBody
	}
	Error string
}

// TestCORSInChromium serves corsPage from one origin and petstore from
// another, both on 127.0.0.1 (different ports are different origins), and
// has headless Chromium run the page: from an allowed origin the page
// creates, lists and reads the headers CORS exposes; from any other, the
// browser refuses, and nothing is created.
func TestCORSInChromium(t *testing.T) {
	t.Parallel()
	bin := needChromium(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	env := newTestEnv(t, withCORS(t, origin))
	api := httptest.NewServer(env.handler)
	defer api.Close()
	env.mustCreate(t, "dog")
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		corsPage.Execute(w, map[string]string{"API": api.URL, "Key": testKey})
	})
	allowed := &httptest.Server{Listener: ln, Config: &http.Server{Handler: page}}
	allowed.Start()
	defer allowed.Close()
	other := httptest.NewServer(page)
	defer other.Close()

	refused := runCORSPage(t, bin, other.URL)
	if !strings.Contains(refused.Error, "Failed to fetch") || refused.Create.Status != 0 {
		t.Errorf("page of another origin: got %+v, want a failed fetch", refused)
	}
	if got := env.mustList(t); len(got) != 1 {
		t.Fatalf("after the refused page: %d categories, want 1 (a refused preflight creates nothing)", len(got))
	}

	saw := runCORSPage(t, bin, allowed.URL)
	if saw.Error != "" {
		t.Fatalf("page of the allowed origin: %s", saw.Error)
	}
	c := saw.Create
	if c.Status != 201 || c.Body.Name != "from-a-page" || c.Location != "/v1/categories/2" || c.RequestID == "" {
		t.Errorf("create as the page saw it: %+v", c)
	}
	if saw.Retry.Status != 201 || saw.Retry.Replayed != "true" {
		t.Errorf("retried create as the page saw it: %+v", saw.Retry)
	}
	p := saw.Page
	if p.Status != 200 || len(p.Body) != 1 || p.Body[0].Name != "dog" || !strings.HasPrefix(p.ETag, `"`) ||
		p.Link != `</v1/categories?limit=1&after=1>; rel="next"` {
		t.Errorf("page as the page saw it: %+v", p)
	}
	if saw.NotModified.Status != 304 {
		t.Errorf("If-None-Match: status %d, want 304", saw.NotModified.Status)
	}
	if saw.Conflict.Status != 409 || saw.Conflict.Body.Code != codeConflict {
		t.Errorf("conflict as the page saw it: %+v", saw.Conflict)
	}
	if k := saw.NoKey; k.Status != 401 || k.Body.Code != codeUnauthorized || !strings.HasPrefix(k.Challenge, "Bearer ") {
		t.Errorf("no key as the page saw it: %+v", k)
	}
	if got := env.mustList(t); len(got) != 2 {
		t.Errorf("after the allowed page: %d categories, want 2", len(got))
	}
}

var pageOut = regexp.MustCompile(`(?s)<pre id="out">(.*?)</pre>`)

// runCORSPage has Chromium load corsPage from url and returns what it saw.
func runCORSPage(t *testing.T, bin, url string) pageSaw {
	t.Helper()
	dom := chromiumDumpDOM(t, bin, url, 10*time.Second)
	m := pageOut.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("%s: no result in the page's DOM:\n%.2000s", url, dom)
	}
	var saw pageSaw
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &saw); err != nil {
		t.Fatalf("%s: the page wrote %.500q: %v", url, m[1], err)
	}
	return saw
}
