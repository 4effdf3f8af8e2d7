package catalog

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"petstore/internal/rawjson"
)

// A journal record is one line of the journal file (internal/journal)
// after its header: the Category JSON as the API serves it and, from
// format version 2, the Idempotency-Key its create was sent with (member
// "idempotency": an object in version 2, a shorter array from version 3).
// The etcd store keeps the same object, without the key, as a category's
// value. See docs/data.md, "Journal format".

// AppendRecord appends the journal line of an accepted create: c's JSON
// and, inside the same object, key's id and at (the create's commit), if
// key is not nil, so that a torn line loses both or neither.
func AppendRecord(dst []byte, c Category, key *IdempotencyKey, at time.Time) []byte {
	dst = c.AppendJSON(dst)
	if key != nil {
		dst = appendKeyMember(dst[:len(dst)-1], key.ID, at) // inside the object
	}
	return append(dst, '\n')
}

// appendKeyMember appends the "idempotency" member of a keyed create's
// journal line, with the object's closing brace (as format version 3
// made it, and 4 keeps it): `,"idempotency":["<id>",<Unix seconds>]}`,
// where <id> is the key's KeyID in unpadded base64url. The request is not
// written: the category on the same line is the validated request, which
// a retry is compared with (NewCategory.SameAs). Every byte counts: the
// journal write and sync of a batch is what durable creates wait for.
func appendKeyMember(dst []byte, id KeyID, at time.Time) []byte {
	dst = append(dst, `,"idempotency":["`...)
	dst = base64.RawURLEncoding.AppendEncode(dst, id[:])
	dst = append(dst, `",`...)
	dst = strconv.AppendInt(dst, at.Unix(), 10)
	return append(dst, `]}`...)
}

// ParseRecord reads one record line as replay accepts it: the rules of
// every earlier version, not the stricter ones of a request.
func ParseRecord(line []byte) (Record, error) {
	if !json.Valid(line) || !utf8.Valid(line) {
		return Record{}, errors.New("not a valid JSON record")
	}
	members, err := rawjson.Members(line, make([]rawjson.Member, 0, 3))
	if err != nil {
		return Record{}, errors.New("not a JSON object")
	}
	var c Category
	var sawID, sawName bool
	var idem *KeyRecord
	for _, m := range members {
		switch {
		case m.Name == "id" && !sawID && rawjson.Kind(m.Value) == "number":
			id, ok := ParseID(string(m.Value))
			if !ok {
				return Record{}, fmt.Errorf("id %s is not a positive integer", m.Value)
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
				return Record{}, err
			}
		case m.Name == "idempotency" && idem == nil && rawjson.Kind(m.Value) == "object":
			if idem, err = parseKeyRecordV2(m.Value); err != nil {
				return Record{}, err
			}
		default:
			return Record{}, fmt.Errorf("unexpected member %q", m.Name)
		}
	}
	if !sawID || !sawName {
		return Record{}, errors.New("record lacks an id or a name")
	}
	return Record{Category: c, Key: idem}, nil
}

// Record is one record line: a category and, if its create was sent
// one, its Idempotency-Key.
type Record struct {
	Category
	Key *KeyRecord
}

// KeyRecord is the "idempotency" member of a record.
type KeyRecord struct {
	ID KeyID
	At time.Time // when the create was made
}

// parseKeyRecord reads the member as version 3 writes it (appendKeyMember):
// ["<id, 16 bytes in unpadded base64url>",<Unix seconds>]. Nothing of the
// request is kept: it is the category on the same line.
func parseKeyRecord(v []byte) (*KeyRecord, error) {
	bad := errors.New(`the "idempotency" member is not ["<key id>",<Unix seconds>] as petstore writes it`)
	elems, err := rawjson.Elements(v)
	if err != nil || len(elems) != 2 || rawjson.Kind(elems[0]) != "string" || rawjson.Kind(elems[1]) != "number" {
		return nil, bad
	}
	text, err := rawjson.String(elems[0])
	var r KeyRecord
	if err != nil || base64.RawURLEncoding.EncodedLen(len(r.ID)) != len(text) {
		return nil, bad
	}
	if n, err := base64.RawURLEncoding.Strict().Decode(r.ID[:], []byte(text)); err != nil || n != len(r.ID) {
		return nil, bad
	}
	secs, err := strconv.ParseInt(string(elems[1]), 10, 64)
	if err != nil {
		return nil, bad
	}
	r.At = time.Unix(secs, 0)
	return &r, nil
}

// parseKeyRecordV2 reads the member as version 2 wrote it:
// {"id":<32 hex>,"request":<32 hex>,"at":<Unix ms>}. The request's
// fingerprint is checked for its form and not kept: the category on the
// same line is the request.
func parseKeyRecordV2(v []byte) (*KeyRecord, error) {
	bad := errors.New(`the "idempotency" member is not {"id","request","at"} as format version 2 wrote it`)
	members, err := rawjson.Members(v, make([]rawjson.Member, 0, 3))
	if err != nil || len(members) != 3 {
		return nil, bad
	}
	var r KeyRecord
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
		case m.Name == "id" && rawjson.Kind(m.Value) == "string" && hex16(r.ID[:], m.Value):
			seen[0] = true
		case m.Name == "request" && rawjson.Kind(m.Value) == "string" && hex16(request[:], m.Value):
			seen[1] = true
		case m.Name == "at" && rawjson.Kind(m.Value) == "number":
			ms, err := strconv.ParseInt(string(m.Value), 10, 64)
			if err != nil {
				return nil, bad
			}
			r.At, seen[2] = time.UnixMilli(ms), true
		default:
			return nil, bad
		}
	}
	if seen != [3]bool{true, true, true} {
		return nil, bad
	}
	return &r, nil
}
