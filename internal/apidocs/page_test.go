package apidocs

import (
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
)

// Tests of Render without the service; the service's tests check the page
// made from the document it serves (docspage_test.go, at the top of the
// module).

// A document that is not JSON, not OpenAPI 3.1, or gives no server for an
// operation makes no page.
func TestRenderRefusesBadDocuments(t *testing.T) {
	t.Parallel()
	for name, bad := range map[string]string{"not JSON": "{", "OpenAPI 3.0": `{"openapi":"3.0.3"}`, "no server": `{"openapi":"3.1.1","paths":{"/x":{"get":{}}}}`} {
		if _, err := Render([]byte(bad)); err == nil {
			t.Errorf("%s: a page was made", name)
		}
	}
}

// The policy allows the page's one style element by its hash and nothing
// else, and the ETag changes with the page.
func TestRenderPolicyAndETag(t *testing.T) {
	t.Parallel()
	const doc = `{"openapi":"3.1.1","info":{"title":"T","version":"1"},"servers":[{"url":"http://localhost:8080"}],` +
		`"paths":{"/x":{"get":{"operationId":"getX","summary":"Get x","security":[],"responses":{"200":{"description":"ok"}}}}}}`
	page, err := Render([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllSubmatch(page.HTML, -1)
	if len(style) != 1 {
		t.Fatalf("the page has %d style elements, want 1", len(style))
	}
	sum := sha256.Sum256(style[0][1])
	want := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	if page.ContentSecurityPolicy != want {
		t.Errorf("Content-Security-Policy: got %q, want %q", page.ContentSecurityPolicy, want)
	}
	if !strings.Contains(string(page.HTML), `id="getX"`) {
		t.Errorf("the page has no entry for getX")
	}
	other, err := Render([]byte(strings.Replace(doc, "Get x", "Get another x", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.ETag) < 3 || page.ETag[0] != '"' || page.ETag[len(page.ETag)-1] != '"' || other.ETag == page.ETag {
		t.Errorf("ETags %s and %s: want two different quoted tags", page.ETag, other.ETag)
	}
}
