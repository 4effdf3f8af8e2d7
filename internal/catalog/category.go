package catalog

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"petstore/internal/rawjson"
)

// Bounds of a request's fields (docs/api.md, "Category rules").
const (
	MaxNameLen        = 100  // code points, after trimming
	MaxDescriptionLen = 1000 // code points
)

// Category is a stored category.
type Category struct {
	ID             int64
	Name           string
	Description    string
	HasDescription bool // an absent description stays absent in answers
}

// AppendJSON appends c as the Category JSON object the API serves.
func (c Category) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, c.ID, 10)
	dst = append(dst, `,"name":`...)
	dst = rawjson.AppendString(dst, c.Name)
	if c.HasDescription {
		dst = append(dst, `,"description":`...)
		dst = rawjson.AppendString(dst, c.Description)
	}
	return append(dst, '}')
}

// NewCategory is a create request, validated by the HTTP layer (docs/api.md,
// "Category rules"): Name is trimmed, and both fields follow the rules.
type NewCategory struct {
	Name           string
	Description    string
	HasDescription bool // an absent description stays absent in answers

	// Key is the create's Idempotency-Key, or nil if it was sent none.
	Key *IdempotencyKey
}

// WithID returns the category that nc makes when given id: the one place a
// request becomes a category.
func (nc NewCategory) WithID(id int64) Category {
	return Category{ID: id, Name: nc.Name, Description: nc.Description, HasDescription: nc.HasDescription}
}

// SameAs reports whether nc asks for the category whose JSON made, of id,
// was made from: categories never change, so a stored category is the
// validated request it was made from, and a retry is told from another
// request by comparing the two (docs/api.md, "Safe retries").
func (nc NewCategory) SameAs(made []byte, id int64) bool {
	var buf [512]byte // the usual category fits: no allocation
	return string(nc.WithID(id).AppendJSON(buf[:0])) == string(made)
}

// FoldName returns the key under which name is unique: two names that
// strings.EqualFold considers equal have the same key, and so have two that
// differ only where one has a fullwidth form (U+FF01 to U+FF5E) and the
// other the ASCII character it stands for ("ｄｏｇ" is "dog"), and so have two
// that differ only in which space separator (Zs: no-break space, thin space
// …) stands where ("do g" with U+00A0 is "do g"). It is the key of every
// store, so a change to it changes which names collide: replay keeps both
// of two stored names that now collide (see Index.Append).
func FoldName(name string) string {
	ascii := true
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(name)
	}
	return strings.Map(foldRune, name)
}

// foldRune maps a rune to one representative of its simple-folding orbit
// (the equivalence strings.EqualFold uses): the lower case of its smallest
// member, which agrees with FoldName's ASCII path; a fullwidth form to the
// ASCII character it stands for, and a space separator to a space.
func foldRune(r rune) rune {
	if 0xFF01 <= r && r <= 0xFF5E {
		r -= 0xFF01 - '!'
	}
	if unicode.Is(unicode.Zs, r) {
		return ' '
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return unicode.ToLower(least)
}

// ParseID parses a canonical positive decimal int64: "1", not "+1", "01",
// "-1" or "1.0".
func ParseID(s string) (int64, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil
}
