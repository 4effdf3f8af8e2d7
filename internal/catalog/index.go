package catalog

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"petstore/internal/rawjson"
)

// Index is the categories in the form the API serves them: one JSON array,
// encoded once when a category is added, so that a list costs a copy of bytes
// whatever the number of categories, and a get by id slices the same bytes.
// Every store keeps its categories in one (the etcd store as its cache).
//
// An Index has one writer at a time (its owner serialises Add, Append and
// Publish); readers take snapshots, which never change and never wait.
type Index struct {
	names *nameTable // FoldName of every name → its id
	list  []byte     // "[" then the categories' JSON joined by ","; no "]"
	items []item     // one per category, ascending id
	crc   uint32     // CRC-32C of list, for the ETag

	snap atomic.Pointer[Snapshot]
}

// item locates one category's JSON in the list: it ends at list[end] and
// starts one byte after the previous item's end (past the ",").
type item struct {
	id  int64
	end int
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// NewIndex returns an empty index with room for about n categories of
// size bytes of JSON in all, and publishes it.
func NewIndex(n, size int) *Index {
	x := &Index{
		names: newNameTable(n),
		list:  make([]byte, 1, size+1),
		items: make([]item, 0, n),
	}
	x.list[0] = '['
	x.Publish()
	return x
}

// Has reports whether a category with the folded name key exists.
func (x *Index) Has(key string) bool {
	_, ok := x.names.get(key, x.named) // the writer's own table: no lock to read it
	return ok
}

// Add appends c, whose id must be greater than every id in x, and returns
// its JSON. It reports false, and adds the category all the same, when key
// was taken already: replay keeps both categories of a file written by a Go
// whose case folding told their names apart. Readers see it after Publish.
func (x *Index) Add(key string, c Category) (json []byte, unique bool) {
	x.names.mu.Lock()
	unique = x.names.put(key, c.ID, x.named)
	x.names.mu.Unlock()
	if len(x.items) > 0 {
		x.list = append(x.list, ',')
	}
	start := len(x.list)
	x.list = c.AppendJSON(x.list)
	x.crc = crc32.Update(x.crc, crcTable, x.list[start-1:])
	x.items = append(x.items, item{id: c.ID, end: len(x.list)})
	return x.list[start:len(x.list):len(x.list)], unique
}

// named reports whether the category id, added already, has a name that
// folds to key.
func (x *Index) named(id int64, key string) bool {
	i, ok := position(x.items, id)
	return ok && nameFoldsTo(jsonAt(x.list, x.items, i), key)
}

// position returns where id is in items, and false when it is not there.
func position(items []item, id int64) (int, bool) {
	i := sort.Search(len(items), func(i int) bool { return items[i].id >= id })
	return i, i < len(items) && items[i].id == id
}

// startOf returns where the JSON of the category at position i begins in
// the list: past the "[" or past the "," that ends the one before.
func startOf(items []item, i int) int {
	if i == 0 {
		return 1
	}
	return items[i-1].end + 1
}

// jsonAt returns the JSON of the category at position i.
func jsonAt(list []byte, items []item, i int) []byte {
	end := items[i].end
	return list[startOf(items, i):end:end]
}

// nameFoldsTo reports whether the name in a category's JSON, as the index
// wrote it, folds to key: FoldName(name) == key, read where it lies, rune
// by rune, with no copy.
func nameFoldsTo(json []byte, key string) bool {
	const before = `,"name":"`
	i := bytes.Index(json, []byte(before))
	if i < 0 {
		return false
	}
	raw := json[i+len(before):]
	k := 0 // how much of key the name has matched
	for j := 0; j < len(raw); {
		var r rune
		switch b := raw[j]; {
		case b == '"':
			return k == len(key)
		case b == '\\':
			var ok bool
			if r, j, ok = unescapeAt(raw, j); !ok {
				return FoldName(nameIn(json)) == key // an escape the index does not write
			}
		case b < utf8.RuneSelf:
			if 'A' <= b && b <= 'Z' { // FoldName of ASCII is its lower case
				b += 'a' - 'A'
			}
			if k == len(key) || key[k] != b {
				return false
			}
			k++
			j++
			continue
		default:
			var size int
			r, size = utf8.DecodeRune(raw[j:]) // RuneError for a bad byte, as strings.Map
			j += size
		}
		var buf [utf8.UTFMax]byte
		for _, c := range utf8.AppendRune(buf[:0], foldRune(r)) {
			if k == len(key) || key[k] != c {
				return false
			}
			k++
		}
	}
	return false // no closing quote
}

// unescapeAt decodes the JSON escape at raw[j] (a backslash), and returns
// the rune and where the text goes on; false for a surrogate or a
// malformed escape, which rawjson.AppendString does not write.
func unescapeAt(raw []byte, j int) (rune, int, bool) {
	if j+1 >= len(raw) {
		return 0, 0, false
	}
	switch c := raw[j+1]; c {
	case '"', '\\', '/':
		return rune(c), j + 2, true
	case 'b':
		return '\b', j + 2, true
	case 'f':
		return '\f', j + 2, true
	case 'n':
		return '\n', j + 2, true
	case 'r':
		return '\r', j + 2, true
	case 't':
		return '\t', j + 2, true
	case 'u':
		if j+6 > len(raw) {
			return 0, 0, false
		}
		var r rune
		for _, h := range raw[j+2 : j+6] {
			switch {
			case '0' <= h && h <= '9':
				r = r<<4 | rune(h-'0')
			case 'a' <= h && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case 'A' <= h && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return 0, 0, false
			}
		}
		if utf16.IsSurrogate(r) {
			return 0, 0, false
		}
		return r, j + 6, true
	}
	return 0, 0, false
}

// nameTable maps the folded name of every category to its id. The index's
// writer changes it under mu; readers of any snapshot look names up under
// mu too, and keep only ids their snapshot holds.
//
// It holds no pointer for the collector to follow, however many names: a
// million names kept as strings made every collection mark a million
// objects, most of what a page or a look-up cost beyond the list of 100
// (docs/performance.md, "Pages and look-up by name"). slots maps a 64-bit
// hash of each name to the id of its category; a look-up reads that
// category's name back to compare. A name whose slot another name holds
// is kept in more, by name: a million names hold such a pair about once in
// 40 million catalogues.
type nameTable struct {
	mu    sync.RWMutex
	seed  maphash.Seed
	hash  func(maphash.Seed, string) uint64 // maphash.String; tests make names collide
	slots map[uint64]int64
	more  map[string]int64 // nil until a collision
}

func newNameTable(n int) *nameTable {
	return &nameTable{seed: maphash.MakeSeed(), hash: maphash.String, slots: make(map[uint64]int64, n)}
}

// get returns the id of the category whose folded name is key. named
// reports whether a category has that name, false for one the caller
// cannot see.
func (t *nameTable) get(key string, named func(id int64, key string) bool) (int64, bool) {
	if id, ok := t.slots[t.hash(t.seed, key)]; ok && named(id, key) {
		return id, true
	}
	id, ok := t.more[key]
	return id, ok
}

// put makes key name the category id, and reports whether no category had
// that name before.
func (t *nameTable) put(key string, id int64, named func(id int64, key string) bool) (unique bool) {
	h := t.hash(t.seed, key)
	holder, taken := t.slots[h]
	if !taken {
		t.slots[h] = id
		return true
	}
	if named(holder, key) {
		t.slots[h] = id // the later of two alike (see Index.Append)
		return false
	}
	if t.more == nil {
		t.more = make(map[string]int64)
	}
	_, had := t.more[key]
	t.more[key] = id
	return !had
}

// Append adds a category read back from storage (replay), whose id must
// follow LastID. It reports whether the name equals an earlier one under
// this build's FoldName: the category is kept all the same, since the build
// that wrote it told them apart (a newer Go can fold differently), and
// refusing it would make the data unreadable.
func (x *Index) Append(c Category) (collides bool, err error) {
	if last := x.LastID(); c.ID <= last {
		return false, fmt.Errorf("id %d does not follow id %d", c.ID, last)
	}
	_, unique := x.Add(FoldName(c.Name), c)
	return !unique, nil
}

// Len returns how many categories x holds, published or not.
func (x *Index) Len() int { return len(x.items) }

// LastID returns the greatest id, or 0 when there is none.
func (x *Index) LastID() int64 { return lastID(x.items) }

func lastID(items []item) int64 {
	if len(items) == 0 {
		return 0
	}
	return items[len(items)-1].id
}

// NameAt returns the name of the category at position i (0 is the lowest
// id), decoded from its JSON, which the index wrote.
func (x *Index) NameAt(i int) string { return nameIn(jsonAt(x.list, x.items, i)) }

// Holder returns the id and name of the category whose folded name is key
// (FoldName), published or not, and false when there is none. Only the
// index's writer calls it.
func (x *Index) Holder(key string) (id int64, name string, ok bool) {
	id, ok = x.names.get(key, x.named)
	if !ok {
		return 0, "", false
	}
	if i, found := position(x.items, id); found {
		name = x.NameAt(i)
	}
	return id, name, true
}

// nameIn returns the name of a category's JSON as the index wrote it.
func nameIn(json []byte) string {
	members, _ := rawjson.Members(json, make([]rawjson.Member, 0, 3))
	for _, m := range members {
		if m.Name == "name" {
			name, _ := rawjson.String(m.Value)
			return name
		}
	}
	return ""
}

// NameOf returns the name of the category id as this snapshot holds it,
// and false when it holds none.
func (s *Snapshot) NameOf(id int64) (string, bool) {
	json, ok := s.Get(id)
	if !ok {
		return "", false
	}
	return nameIn(json), true
}

// Publish makes everything added so far visible to readers.
func (x *Index) Publish() {
	n := len(x.items)
	etag := make([]byte, 0, 32)
	etag = append(etag, '"')
	etag = strconv.AppendInt(etag, int64(n), 10)
	etag = append(etag, '-')
	etag = strconv.AppendUint(etag, uint64(x.crc), 16)
	etag = append(etag, '"')
	// The writer only appends beyond len(list) and len(items), so the
	// snapshot's bytes never change.
	s := &Snapshot{list: x.list[:len(x.list):len(x.list)], items: x.items[:n:n], etag: string(etag), names: x.names}
	if len(s.list)+1 <= ClosedLimit {
		s.closed = append(append(make([]byte, 0, len(s.list)+1), s.list...), ']')
	} else {
		s.closed = append(append(make([]byte, 0, EdgeSize+1), s.list[len(s.list)-EdgeSize:]...), ']')
	}
	x.snap.Store(s)
}

// Snapshot returns what readers see now.
func (x *Index) Snapshot() *Snapshot { return x.snap.Load() }

// Snapshot is the categories as of one Publish. It never changes: handlers
// may cache what they derive from one, keyed by its pointer.
type Snapshot struct {
	list   []byte
	closed []byte // list with its "]" up to ClosedLimit bytes; above, its last EdgeSize bytes with "]"
	items  []item
	etag   string // strong ETag of the list: the count and a CRC of its bytes
	names  *nameTable
}

// Len returns the number of categories.
func (s *Snapshot) Len() int { return len(s.items) }

// LastID returns the greatest id, or 0 when there is none.
func (s *Snapshot) LastID() int64 { return lastID(s.items) }

// ETag returns the strong ETag of the list, quotes included. Two snapshots
// of the same categories have the same ETag, in any process.
func (s *Snapshot) ETag() string { return s.etag }

// Size returns the length in bytes of the list's JSON array.
func (s *Snapshot) Size() int { return len(s.list) + len("]") }

// WriteTo writes the JSON array of every category, sorted by id, in as
// few writes as a server writing the whole array at once (see array.go):
// one up to ClosedLimit bytes; above, the list but for its last EdgeSize
// bytes, then those with "]". Both are the snapshot's own bytes, copied
// for no answer.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	if len(s.list)+1 <= ClosedLimit {
		n, err := w.Write(s.closed)
		return int64(n), err
	}
	n, err := w.Write(s.list[:len(s.list)-EdgeSize])
	if err != nil {
		return int64(n), err
	}
	m, err := w.Write(s.closed)
	return int64(n + m), err
}

// Get returns the JSON of the category with the given id, and false if
// there is none. The caller must not modify the bytes.
func (s *Snapshot) Get(id int64) ([]byte, bool) {
	i, ok := position(s.items, id)
	if !ok {
		return nil, false
	}
	return jsonAt(s.list, s.items, i), true
}

// At returns the id and JSON of the category at position i, 0 ≤ i < Len,
// in ascending id. The caller must not modify the bytes.
func (s *Snapshot) At(i int) (id int64, json []byte) {
	return s.items[i].id, jsonAt(s.list, s.items, i)
}

// Page returns the items of the JSON array of at most limit categories
// whose id is greater than after, in ascending id, joined by commas (the
// snapshot's bytes, not a copy: write them with WriteArray), the last id,
// and whether more categories follow the page. It costs a binary search,
// whatever Len is. limit ≤ 0 means no limit.
func (s *Snapshot) Page(after int64, limit int) (items []byte, last int64, more bool) {
	i := sort.Search(len(s.items), func(i int) bool { return s.items[i].id > after })
	j := len(s.items)
	if limit > 0 && j-i > limit {
		j = i + limit
	}
	if i == j {
		return nil, 0, false
	}
	end := s.items[j-1].end
	return s.list[startOf(s.items, i):end:end], s.items[j-1].id, j < len(s.items)
}

// Find returns the id and JSON of the category whose folded name is key
// (FoldName), and false when this snapshot holds none. When two stored
// names fold alike (see Index.Append), the later one is found.
func (s *Snapshot) Find(key string) (id int64, json []byte, ok bool) {
	if s.names == nil {
		return 0, nil, false
	}
	s.names.mu.RLock()
	id, ok = s.names.get(key, s.named)
	s.names.mu.RUnlock()
	if !ok {
		return 0, nil, false
	}
	if json, ok = s.Get(id); !ok {
		return 0, nil, false // kept by name, added after s was published
	}
	return id, json, true
}

// named reports whether this snapshot holds the category id with a name
// that folds to key.
func (s *Snapshot) named(id int64, key string) bool {
	json, ok := s.Get(id)
	return ok && nameFoldsTo(json, key)
}
