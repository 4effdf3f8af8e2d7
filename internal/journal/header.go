package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Version is the format version this package writes. It reads versions 1
// to Version, and at open rewrites an older header to Version (one byte,
// in place), so that an older petstore refuses the file instead of
// misreading it. What each version adds to the lines is the caller's
// (see docs/data.md, "Format versions"); from version 4 the file may end
// in zero bytes, space written ahead of the last line (see reserve),
// which the next lines overwrite, which replay skips and which a clean
// close cuts off.
const Version = 4

// currentHeader is Header(Version).
const currentHeader = `{"format":"petstore-categories","version":4}`

// Header returns the header line of format version v, as petstore writes
// it, without its newline.
func Header(v int) string {
	return `{"format":"petstore-categories","version":` + strconv.Itoa(v) + `}`
}

// header is what checkHeader read: the format version, and where its
// number stands in the line, to rewrite it.
type header struct {
	version    int
	at, length int
}

// checkHeader accepts a header of versions 1 to Version however it is
// spaced or ordered: a JSON object of exactly the members format and
// version. Anything else gets a message that says what is wrong with it.
func checkHeader(line []byte) (header, error) {
	if string(line) == currentHeader {
		return header{version: Version, at: len(line) - 2, length: 1}, nil
	}
	// Lines after such a header end in \r too. Rather than accept a file
	// a tool has rewritten, and append LF lines to it, petstore asks for it
	// back as it was: the conversion is undone exactly by dos2unix.
	if bytes.HasSuffix(line, []byte{'\r'}) {
		return header{}, errors.New("the header line ends with a carriage return: the file was converted to CRLF line endings; convert it back to LF (e.g. dos2unix) and start again")
	}
	notJournal := errors.New("not a petstore journal: the first line is not its header")
	members, ok := headerMembers(line)
	if !ok {
		return header{}, notJournal
	}
	var format, version *member
	others := 0
	for i, m := range members {
		switch {
		case m.name == "format" && format == nil:
			format = &members[i]
		case m.name == "version" && version == nil:
			version = &members[i]
		default:
			others++
		}
	}
	var name string
	if format == nil || json.Unmarshal(format.value, &name) != nil || name != "petstore-categories" {
		return header{}, notJournal
	}
	if version != nil && isNumber(version.value) {
		n, err := strconv.ParseFloat(string(version.value), 64)
		if err == nil && (math.Trunc(n) != n || n < 1 || n > Version) {
			return header{}, fmt.Errorf("journal format version %s is not supported by this petstore, which reads versions 1 to %d", version.value, Version)
		}
		if err == nil && others == 0 {
			return header{version: int(n), at: version.at, length: len(version.value)}, nil
		}
	}
	return header{}, fmt.Errorf("the header is not written as petstore writes it: %s", currentHeader)
}

// member is one name/value pair of the header object: value is its raw
// JSON text, which starts at byte at of the line.
type member struct {
	name  string
	value []byte
	at    int
}

// headerMembers returns the members of line, in order, duplicates kept,
// and whether line is one JSON object.
func headerMembers(line []byte) ([]member, bool) {
	if !json.Valid(line) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		name, isName := tok.(string)
		var value json.RawMessage
		if err != nil || !isName || dec.Decode(&value) != nil {
			return nil, false
		}
		end := int(dec.InputOffset()) // a value ends where the decoder stands
		members = append(members, member{name: name, value: line[end-len(value) : end], at: end - len(value)})
	}
	return members, true
}

// isNumber reports whether the raw JSON value v is a number.
func isNumber(v []byte) bool {
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}
