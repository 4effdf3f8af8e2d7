package main

import (
	"fmt"
	"strconv"
	"strings"

	"petstore/internal/catalog"
	"petstore/internal/rawjson"
	"petstore/internal/textcut"
)

// problem is one thing wrong with a request body.
type problem struct {
	code    string
	message string
}

// maxProblemsListed bounds the problems one message lists (docs/security.md,
// "Requests"): a body of a hundred thousand unknown members must not earn
// an answer, and an access line, of megabytes.
const maxProblemsListed = 10

// problemCodeOrder decides the code of an answer that reports several
// problems: an unknown member usually explains a "missing" one (a typo such
// as "Name"), so it comes first.
var problemCodeOrder = []string{codeUnknownField, codeMissingField, codeInvalidField}

// problemsError folds the listed problems into one *apiError whose message
// names each of them, then says how many more unknown members there were.
func problemsError(problems []problem, moreUnknown int) error {
	if len(problems) == 0 {
		return nil
	}
	code := problems[0].code
	for _, c := range problemCodeOrder {
		if hasProblem(problems, c) {
			code = c
			break
		}
	}
	msgs := make([]string, len(problems), len(problems)+1)
	for i, p := range problems {
		msgs[i] = p.message
	}
	if moreUnknown > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more unknown fields", moreUnknown))
	}
	return apiErrorf(code, "%s", strings.Join(msgs, "; "))
}

func hasProblem(problems []problem, code string) bool {
	for _, p := range problems {
		if p.code == code {
			return true
		}
	}
	return false
}

// parseNewCategory turns the members of a request body into a NewCategory,
// or an error that names what is wrong with it: every bad field, and the
// unknown members up to maxProblemsListed problems in all. The members have
// distinct names (decodeJSONObject refuses duplicates).
func parseNewCategory(members []rawjson.Member) (catalog.NewCategory, error) {
	var (
		nc                   catalog.NewCategory
		nameValue, descValue []byte
		unknown              []string // the first maxProblemsListed
		unknownCount         int
	)
	for _, m := range members {
		switch m.Name {
		case "name":
			nameValue = m.Value
		case "description":
			descValue = m.Value
		default:
			// Only the listed ones cost a message: counting the others
			// keeps a body of many members linear and cheap.
			unknownCount++
			if len(unknown) < maxProblemsListed {
				unknown = append(unknown, m.Name)
			}
		}
	}

	var fields []problem // at most one per field
	if p := parseName(nameValue, &nc); p != nil {
		fields = append(fields, *p)
	}
	if p := parseDescription(descValue, &nc); p != nil {
		fields = append(fields, *p)
	}

	// Unknown members first, in body order, then the fields, which are
	// always listed: the unknown members beyond the bound are only counted.
	listed := min(unknownCount, maxProblemsListed-len(fields))
	problems := make([]problem, 0, listed+len(fields))
	for _, name := range unknown[:listed] {
		problems = append(problems, problem{codeUnknownField, unknownFieldMessage(name)})
	}
	problems = append(problems, fields...)
	return nc, problemsError(problems, unknownCount-listed)
}

// parseName sets nc.Name from the raw JSON value v of member "name" (nil
// when absent), or returns what is wrong with it.
func parseName(v []byte, nc *catalog.NewCategory) *problem {
	if v == nil || rawjson.Kind(v) == "null" {
		return &problem{codeMissingField, "name is required"}
	}
	if kind := rawjson.Kind(v); kind != "string" {
		return &problem{codeInvalidField, "name must be a string, got " + kind}
	}
	name, msg := decodeText("name", v)
	nc.Name = strings.TrimSpace(name)
	if msg == "" {
		msg = catalog.CheckName(nc.Name)
	}
	if msg != "" {
		return &problem{codeInvalidField, msg}
	}
	return nil
}

// parseDescription sets nc's description from the raw JSON value v of
// member "description" (nil when absent), or returns what is wrong with it.
func parseDescription(v []byte, nc *catalog.NewCategory) *problem {
	if v == nil {
		return nil
	}
	if kind := rawjson.Kind(v); kind != "string" {
		return &problem{codeInvalidField, "description must be a string, got " + kind}
	}
	desc, msg := decodeText("description", v)
	if msg == "" {
		msg = catalog.CheckDescription(desc)
	}
	nc.Description, nc.HasDescription = desc, true
	if msg != "" {
		return &problem{codeInvalidField, msg}
	}
	return nil
}

// decodeText decodes the raw JSON string v, the value of field, or says why
// it is refused: encoding/json would turn an unpaired UTF-16 surrogate
// escape into U+FFFD silently (and two names that differ only there would
// then collide), so the raw text is checked first.
func decodeText(field string, v []byte) (string, string) {
	if r, ok := rawjson.LoneSurrogate(v); ok {
		return "", fmt.Sprintf("%s must not contain a lone surrogate: the escape \\u%04x (%s) is not part of a UTF-16 pair", field, r, catalog.CodePoint(r))
	}
	s, err := rawjson.String(v)
	if err != nil { // v was validated as JSON already
		return "", field + " is not a valid JSON string"
	}
	return s, ""
}

func unknownFieldMessage(name string) string {
	msg := "unknown field " + textcut.QuoteName(name)
	switch {
	case name == "id":
		msg += ": ids are assigned by the service"
	case strings.EqualFold(name, "name"), strings.EqualFold(name, "description"):
		msg += ": member names are case-sensitive, did you mean " + strconv.Quote(strings.ToLower(name)) + "?"
	}
	return msg
}
