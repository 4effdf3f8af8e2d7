package main

import (
	"hash/crc32"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"petstore/internal/catalog"
	"petstore/internal/textcut"
)

// Query parameters are strict on every operation (docs/api.md, "Pages and
// look-up by name"): one the operation does not define, one given twice, an
// empty or a malformed one is 400 invalid_parameter naming it.

// maxPageLimit is the largest limit a page may ask for.
const maxPageLimit = 1000

// listQuery is the query of "GET /v1/categories".
type listQuery struct {
	limit int    // 0: no limit
	after int64  // only ids greater; 0 when absent (ids start at 1)
	name  string // trimmed, not folded; "" when absent
	paged bool   // limit or after given
}

// listParams are the query parameters "GET /v1/categories" defines.
var listParams = []string{"limit", "after", "name"}

// parseListQuery parses the raw query of "GET /v1/categories".
func parseListQuery(raw string) (listQuery, error) {
	var q listQuery
	err := eachQueryParam(raw, listParams, func(name, value string) error {
		switch name {
		case "limit":
			n, ok := parseCanonical(value)
			if !ok || n < 1 || n > maxPageLimit {
				return apiErrorf(codeInvalidParameter, "limit must be a whole number from 1 to %d (no sign, no leading zeros), got %q", maxPageLimit, excerpt(value))
			}
			q.limit, q.paged = int(n), true
		case "after":
			n, ok := parseCanonical(value)
			if !ok {
				return apiErrorf(codeInvalidParameter, "after must be a category id, a non-negative whole number (no sign, no leading zeros), got %q", excerpt(value))
			}
			q.after, q.paged = n, true
		case "name":
			q.name = strings.TrimSpace(value)
			if q.name == "" {
				return apiErrorf(codeInvalidParameter, "name must not be blank")
			}
		}
		return nil
	})
	if err != nil {
		return listQuery{}, err
	}
	if q.name != "" && q.paged {
		return listQuery{}, apiErrorf(codeInvalidParameter, "name combines with neither limit nor after")
	}
	return q, nil
}

// eachQueryParam calls visit with the name and decoded value of every
// parameter of the raw query, in order, after checking that defined names
// it, that it comes once, and that its value is neither empty nor malformed.
func eachQueryParam(raw string, defined []string, visit func(name, value string) error) error {
	var seen uint64 // bit i: defined[i] was given
	for rest := raw; ; {
		param, tail, more := strings.Cut(rest, "&")
		if err := checkQueryParam(param, defined, &seen, visit); err != nil {
			return err
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

// checkQueryParam checks one name=value parameter of a query for
// eachQueryParam, and visits it.
func checkQueryParam(param string, defined []string, seen *uint64, visit func(name, value string) error) error {
	if param == "" {
		return apiErrorf(codeInvalidParameter, "the query has an empty parameter (a stray &)")
	}
	rawName, rawValue, _ := strings.Cut(param, "=")
	name, err := url.QueryUnescape(rawName)
	if err != nil || !utf8.ValidString(name) {
		return apiErrorf(codeInvalidParameter, "query parameter %q is not a well-formed name (bad %% escape or not UTF-8)", excerpt(rawName))
	}
	i := indexOf(defined, name)
	if i < 0 {
		if len(defined) == 0 {
			return apiErrorf(codeInvalidParameter, "unknown query parameter %q: this operation takes no query parameters", excerpt(name))
		}
		return apiErrorf(codeInvalidParameter, "unknown query parameter %q: this operation takes %s", excerpt(name), strings.Join(defined, ", "))
	}
	if *seen&(1<<i) != 0 {
		return apiErrorf(codeInvalidParameter, "query parameter %s is given twice", name)
	}
	*seen |= 1 << i
	value, err := url.QueryUnescape(rawValue)
	if err != nil || !utf8.ValidString(value) {
		return apiErrorf(codeInvalidParameter, "query parameter %s has a malformed value (bad %% escape or not UTF-8)", name)
	}
	if value == "" {
		return apiErrorf(codeInvalidParameter, "query parameter %s is empty", name)
	}
	return visit(name, value)
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// parseCanonical parses a non-negative decimal int64 in canonical form:
// digits only, no leading zero but for "0" itself.
func parseCanonical(s string) (int64, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// excerpt is what an error message quotes of text a client sent: its
// first 40 characters, control characters shown as U+XXXX.
func excerpt(s string) string { return textcut.ShowControls(textcut.Truncate(s, 40)) }

// rejectQuery answers 400 invalid_parameter to a request with a query, for
// the operations that define no query parameter.
func rejectQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			if err := eachQueryParam(r.URL.RawQuery, nil, nil); err != nil {
				writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// listCacheControl is the Cache-Control of the list and its pages: a cache
// keeps them for one client only, and asks each time whether they changed.
var listCacheControl = []string{"private, no-cache"}

// servePage answers "GET /v1/categories" with a query: a page of the
// snapshot, or the category of a name, cut from the encoded list by id, with
// an ETag of its own that changes whenever the catalogue does.
func servePage(w http.ResponseWriter, r *http.Request, snap *catalog.Snapshot) {
	q, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var items []byte // the page's categories, joined by commas
	var last int64
	var more bool
	// One string and one slice hold every header value of the answer.
	var buf [160]byte
	tag := append(buf[:0], strings.TrimSuffix(snap.ETag(), `"`)...)
	if q.name != "" {
		key := catalog.FoldName(q.name)
		if _, json, ok := snap.Find(key); ok {
			items = json
		}
		tag = strconv.AppendUint(append(tag, "-n"...), uint64(crc32.ChecksumIEEE([]byte(key))), 16)
	} else {
		items, last, more = snap.Page(q.after, q.limit)
		tag = strconv.AppendInt(append(tag, "-a"...), q.after, 10)
		tag = strconv.AppendInt(append(tag, "-l"...), int64(q.limit), 10)
	}
	tag = append(tag, '"')
	tagEnd := len(tag)
	tag = strconv.AppendInt(tag, int64(len("[")+len(items)+len("]")), 10)
	lengthEnd := len(tag)
	if more {
		tag = strconv.AppendInt(append(tag, "</v1/categories?limit="...), int64(q.limit), 10)
		tag = strconv.AppendInt(append(tag, "&after="...), last, 10)
		tag = append(tag, `>; rel="next"`...)
	}
	all := string(tag)
	values := []string{all[:tagEnd], all[tagEnd:lengthEnd], all[lengthEnd:]}
	h := w.Header()
	if more {
		h["Link"] = values[2:3:3]
	}
	if answeredNotModified(w, r, values[0:1:1], listCacheControl) {
		return
	}
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = values[1:2:2]
	w.WriteHeader(http.StatusOK)
	catalog.WriteArray(w, items) // in as few writes as one Write of the whole array
}
