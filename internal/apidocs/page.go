package apidocs

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
)

//go:embed docs.html.tmpl
var docsTemplate string

//go:embed docs.css
var docsCSS string

// Page is the rendered page and what its answers say of it.
type Page struct {
	HTML []byte
	// ETag is a strong entity tag of HTML, quoted: another page, another tag.
	ETag string
	// ContentSecurityPolicy allows the page's one style element, by its
	// hash, and nothing else: no script, no frame, nothing loaded.
	ContentSecurityPolicy string
}

// Render renders the page of doc, an OpenAPI 3.1 document.
func Render(doc []byte) (*Page, error) {
	view, err := docsViewOf(doc)
	if err != nil {
		return nil, fmt.Errorf("the docs page: %w", err)
	}
	view.CSS = template.CSS(docsCSS)
	tmpl, err := template.New("docs").Parse(docsTemplate)
	if err != nil {
		return nil, fmt.Errorf("docs.html.tmpl: %w", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, view); err != nil {
		return nil, fmt.Errorf("docs.html.tmpl: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	style := sha256.Sum256([]byte(docsCSS))
	return &Page{
		HTML: buf.Bytes(),
		ETag: `"` + hex.EncodeToString(sum[:12]) + `"`,
		ContentSecurityPolicy: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(style[:]) +
			"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	}, nil
}
