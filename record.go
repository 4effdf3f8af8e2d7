package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"petstore/internal/rawjson"
	"strconv"
	"time"
	"unicode/utf8"

	"petstore/internal/journal"
)

// A journal record is one line of the journal file (internal/journal)
// after its header: the Category JSON as the API serves it and, from
// format version 2, the Idempotency-Key its create was sent with (member
// "idempotency": an object in version 2, a shorter array from version 3).
// See docs/data.md, "Journal format".

// exportHeader starts what -export writes: categories only, no keys, so
// version 1, which every petstore reads (this one upgrades it when it
// opens the file).
var exportHeader = journal.Header(1)

// appendRecord appends the journal line of an accepted create: its
// Category JSON and, inside the same object, the Idempotency-Key it was
// sent with, if any, so that a torn line loses both or neither.
func appendRecord(dst []byte, req *createRequest) []byte {
	dst = req.cat.appendJSON(dst)
	if k := req.nc.idem; k != nil {
		dst = appendKeyMember(dst[:len(dst)-1], k.id, req.at) // inside the object
	}
	return append(dst, '\n')
}

// appendKeyMember appends the "idempotency" member of a keyed create's
// journal line, with the object's closing brace (as format version 3
// made it, and 4 keeps it): `,"idempotency":["<id>",<Unix seconds>]}`,
// where <id> is the key's table id, 16 bytes in unpadded base64url: a
// digest of its scope and text, short whatever the key's length, and no
// client's key text on disk. The
// request is not written: the category on the same line is the validated
// request, which a retry is compared with (replayOrRefuse). Every byte
// counts: the journal write and sync of a batch is what durable creates
// wait for.
func appendKeyMember(dst []byte, id idempotencyID, at time.Time) []byte {
	dst = append(dst, `,"idempotency":["`...)
	dst = base64.RawURLEncoding.AppendEncode(dst, id[:])
	dst = append(dst, `",`...)
	dst = strconv.AppendInt(dst, at.Unix(), 10)
	return append(dst, `]}`...)
}

// replayRecord checks one record line and adds its category to x. It
// reports whether the name equals an earlier one under this build's case
// folding: the category is kept all the same, since the build that wrote
// the file told them apart (a newer Go can fold differently), and refusing
// it would make the data unreadable.
//
// A record's "idempotency" member (format versions 2 and 3) is loaded into
// keys, unless it has expired or keys is nil.
func replayRecord(x *index, line []byte, keys *idempotencyTable) (collides bool, err error) {
	c, idem, err := parseRecord(line)
	if err != nil {
		return false, err
	}
	if c.ID <= x.lastID() {
		return false, fmt.Errorf("id %d does not follow id %d", c.ID, x.lastID())
	}
	if idem != nil && keys != nil {
		keys.load(idem.id, c.ID, idem.at)
	}
	_, unique := x.add(foldName(c.Name), c)
	return !unique, nil
}

// parseRecord reads one record line as replay accepts it: the rules of
// every earlier version, not the stricter ones of a request.
func parseRecord(line []byte) (Category, *keyRecord, error) {
	if !json.Valid(line) || !utf8.Valid(line) {
		return Category{}, nil, errors.New("not a valid JSON record")
	}
	members, err := rawjson.Members(line, make([]rawjson.Member, 0, 3))
	if err != nil {
		return Category{}, nil, errors.New("not a JSON object")
	}
	var c Category
	var sawID, sawName bool
	var idem *keyRecord
	for _, m := range members {
		switch {
		case m.Name == "id" && !sawID && rawjson.Kind(m.Value) == "number":
			id, ok := parseID(string(m.Value))
			if !ok {
				return Category{}, nil, fmt.Errorf("id %s is not a positive integer", m.Value)
			}
			c.ID, sawID = id, true
		case m.Name == "name" && !sawName && rawjson.Kind(m.Value) == "string":
			c.Name, err = rawjson.String(m.Value)
			sawName = err == nil && c.Name != ""
		case m.Name == "description" && !c.HasDescription && rawjson.Kind(m.Value) == "string":
			c.Description, err = rawjson.String(m.Value)
			c.HasDescription = err == nil
		case m.Name == "idempotency" && idem == nil && rawjson.Kind(m.Value) == "array":
			if idem, err = parseKeyRecord(m.Value); err != nil {
				return Category{}, nil, err
			}
		case m.Name == "idempotency" && idem == nil && rawjson.Kind(m.Value) == "object":
			if idem, err = parseKeyRecordV2(m.Value); err != nil {
				return Category{}, nil, err
			}
		default:
			return Category{}, nil, fmt.Errorf("unexpected member %q", m.Name)
		}
	}
	if !sawID || !sawName {
		return Category{}, nil, errors.New("record lacks an id or a name")
	}
	return c, idem, nil
}

// keyRecord is the "idempotency" member of a record.
type keyRecord struct {
	id idempotencyID
	at time.Time // when the create was made
}

// parseKeyRecord reads the member as version 3 writes it (appendKeyMember):
// ["<id, 16 bytes in unpadded base64url>",<Unix seconds>]. Nothing of the
// request is kept: it is the category on the same line.
func parseKeyRecord(v []byte) (*keyRecord, error) {
	bad := errors.New(`the "idempotency" member is not ["<key id>",<Unix seconds>] as petstore writes it`)
	elems, err := rawjson.Elements(v)
	if err != nil || len(elems) != 2 || rawjson.Kind(elems[0]) != "string" || rawjson.Kind(elems[1]) != "number" {
		return nil, bad
	}
	text, err := rawjson.String(elems[0])
	var r keyRecord
	if err != nil || base64.RawURLEncoding.EncodedLen(len(r.id)) != len(text) {
		return nil, bad
	}
	if n, err := base64.RawURLEncoding.Strict().Decode(r.id[:], []byte(text)); err != nil || n != len(r.id) {
		return nil, bad
	}
	secs, err := strconv.ParseInt(string(elems[1]), 10, 64)
	if err != nil {
		return nil, bad
	}
	r.at = time.Unix(secs, 0)
	return &r, nil
}

// parseKeyRecordV2 reads the member as version 2 wrote it:
// {"id":<32 hex>,"request":<32 hex>,"at":<Unix ms>}. The request's
// fingerprint is checked for its form and not kept: the category on the
// same line is the request.
func parseKeyRecordV2(v []byte) (*keyRecord, error) {
	bad := errors.New(`the "idempotency" member is not {"id","request","at"} as format version 2 wrote it`)
	members, err := rawjson.Members(v, make([]rawjson.Member, 0, 3))
	if err != nil || len(members) != 3 {
		return nil, bad
	}
	var r keyRecord
	var request [16]byte
	var seen [3]bool
	hex16 := func(dst []byte, v []byte) bool {
		text, err := rawjson.String(v)
		if err != nil || len(text) != 2*len(dst) {
			return false // hex.Decode would write past dst
		}
		n, herr := hex.Decode(dst, []byte(text))
		return herr == nil && n == len(dst)
	}
	for _, m := range members {
		switch {
		case m.Name == "id" && rawjson.Kind(m.Value) == "string" && hex16(r.id[:], m.Value):
			seen[0] = true
		case m.Name == "request" && rawjson.Kind(m.Value) == "string" && hex16(request[:], m.Value):
			seen[1] = true
		case m.Name == "at" && rawjson.Kind(m.Value) == "number":
			ms, err := strconv.ParseInt(string(m.Value), 10, 64)
			if err != nil {
				return nil, bad
			}
			r.at, seen[2] = time.UnixMilli(ms), true
		default:
			return nil, bad
		}
	}
	if seen != [3]bool{true, true, true} {
		return nil, bad
	}
	return &r, nil
}
