package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// The journal is a JSON Lines file: a header line that names the format and
// its version, then one line per category holding the Category JSON as the
// API serves it and, from version 2, the Idempotency-Key its create was
// sent with (member "idempotency": an object in version 2, a shorter array
// from version 3). Lines are only ever added after the last one, so
// copying the file while the service runs gives a consistent prefix.
//
// From version 4 the file may end in zero bytes: space the journal wrote
// ahead of its last line (see reserve), which the next lines overwrite,
// and which a clean close cuts off. Replay skips them.
//
// This petstore reads versions 1 to 4 and writes 4. At start it rewrites
// an older header to 4 (one byte, in place), so that an older petstore
// refuses the file instead of misreading it.
const (
	journalVersion = 4
	journalHeader  = `{"format":"petstore-categories","version":4}` // journalHeaderOf(journalVersion)
)

// journalHeaderOf is the header line of format version v, as petstore
// writes it, without its newline.
func journalHeaderOf(v int) string {
	return `{"format":"petstore-categories","version":` + strconv.Itoa(v) + `}`
}

// exportHeader starts what -export writes: categories only, no keys, so
// version 1, which every petstore reads (this one upgrades it when it
// opens the file).
var exportHeader = journalHeaderOf(1)

// journal is an open, locked journal file. One goroutine at a time may
// append to it.
type journal struct {
	f        *os.File
	path     string
	readOnly bool  // -export and -import: read, never change the file
	size     int64 // length of the good, synced lines: where the next ones go
	broken   bool  // a failed write could not be undone: nothing more may be appended
	syncs    int   // syncs of appends, for tests of group commit

	// end is the file's length: size, then zero bytes written and fsynced
	// ahead (see reserve). zeroFill writes them (tests fail it); after a
	// failure it is not tried again before the lines reach nextFill.
	end      int64
	nextFill int64
	zeroFill func(f *os.File, from, to int64) error
}

// reserveAhead is how much space the journal writes ahead of its lines: one
// zero fill and fsync per this many bytes of lines.
const reserveAhead = 1 << 20

// openJournal opens and locks the journal at path, creating it (and its
// directory) if needed, and returns it with its content, not yet replayed.
// A second process opening the same path fails.
func openJournal(path string, syncDir func(dir string) error, readOnly bool) (*journal, []byte, error) {
	dir := filepath.Dir(path)
	var f *os.File
	var err error
	created := false
	// O_NOFOLLOW: a symbolic link planted at path, in a directory others
	// can write, must not make petstore create or overwrite its target.
	if readOnly {
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	} else {
		if err := makeDirs(dir, syncDir); err != nil {
			return nil, nil, err
		}
		_, statErr := os.Lstat(path)
		created = errors.Is(statErr, os.ErrNotExist)
		// Not O_APPEND: lines are written in place, over the zeros
		// reserved ahead (and WriteAt refuses a file opened to append).
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	}
	if err != nil {
		return nil, nil, refuseSymlink(path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil, fmt.Errorf("%s is in use by another petstore process", path)
		}
		return nil, nil, fmt.Errorf("locking %s: %w", path, err)
	}
	j := &journal{f: f, path: path, readOnly: readOnly, zeroFill: zeroFill}
	if created {
		if err := syncDir(dir); err != nil {
			j.close()
			return nil, nil, err
		}
	}
	data, err := readAll(f)
	if err != nil {
		j.close()
		return nil, nil, err
	}
	return j, data, nil
}

// refuseSymlink explains the error of an open with O_NOFOLLOW that met a
// symbolic link (ELOOP, which alone says "too many levels of symbolic
// links"); other errors are returned as they are.
func refuseSymlink(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		if info, lerr := os.Lstat(path); lerr == nil && info.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link; petstore opens its files only where they are named, never through a link", path)
		}
	}
	return err
}

// makeDirs creates dir and its missing parents, and fsyncs each one it
// creates into its parent: os.MkdirAll syncs nothing, and a crash could
// otherwise lose a directory, and with it the journal and everything
// acknowledged in it.
func makeDirs(dir string, syncDir func(dir string) error) error {
	var missing []string // deepest first
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		// One made meanwhile by another process is synced all the same.
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

func readAll(f *os.File) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, info.Size()), data); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return data, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// replay reads the journal's records, data, into a new index. A torn last
// line (a write cut short by a crash) is set aside in path+".torn" and cut
// off; damage anywhere else stops the replay with the line number.
func (j *journal) replay(data []byte, keys *idempotencyTable, log *slog.Logger) (*index, error) {
	// Zeros at the end are space reserved ahead (version 4), not lines.
	// Lines never hold a zero byte: one in the last batch's lines is a
	// write a crash cut short (see isTorn), anywhere else damage.
	fileLen := int64(len(data))
	data = bytes.TrimRight(data, "\x00")
	x := newIndex(bytes.Count(data, []byte{'\n'}), len(data))
	var collisions []int // categories whose name folds like an earlier one's
	var version header

	lineNo, offset := 0, 0
	for offset < len(data) {
		lineNo++
		line, rest, complete := bytes.Cut(data[offset:], []byte{'\n'})
		var err error
		switch {
		case !complete && isTorn(line, complete, lineNo, nil):
			// Even a record that parses is dropped without its newline: its
			// write never finished, so it was never acknowledged.
			err = errors.New("torn")
		case lineNo == 1 && !complete:
			err = errors.New("the header line does not end with a newline, and is not a header petstore wrote cut short")
		case lineNo == 1:
			version, err = checkJournalHeader(line)
		default:
			var collides bool
			if collides, err = replayRecord(x, line, keys); collides {
				collisions = append(collisions, len(x.items)-1)
			}
		}
		if err != nil {
			if !isTorn(line, complete, lineNo, rest) {
				if lineNo == 1 { // a header refused is not damage: say only what is wrong
					return nil, fmt.Errorf("%s:1: %v; the file was left as it is", j.path, err)
				}
				return nil, fmt.Errorf("%s:%d: %v; the file is damaged and was left as it is: repair or restore it", j.path, lineNo, err)
			}
			if j.readOnly {
				log.Warn("journal: a torn end (the last write, cut short by a crash) is left out; the file is left as it is", "path", j.path, "line", lineNo)
				break
			}
			if err := j.dropTornTail(data[offset:], int64(offset), lineNo, log); err != nil {
				return nil, err
			}
			fileLen = int64(offset)
			break
		}
		offset += len(line) + 1
		j.size = int64(offset)
	}
	if len(collisions) > 0 {
		warnCollisions(x, j.path, collisions, log)
	}
	if j.readOnly {
		// Read as it is: no header written, none rewritten.
	} else if j.size == 0 {
		// Any zeros the file holds are written over from 0.
		if err := j.append([]byte(journalHeader + "\n")); err != nil {
			return nil, fmt.Errorf("writing the header of %s: %w", j.path, err)
		}
	} else if version.version < journalVersion {
		if err := j.upgradeHeader(version); err != nil {
			return nil, fmt.Errorf("rewriting the header of %s to version %d: %w", j.path, journalVersion, err)
		}
		log.Info("journal: header rewritten to the format version this petstore writes; an older petstore no longer reads this file",
			"path", j.path, "from", version.version, "to", journalVersion)
	}
	// Known only now: a journal that fails to open is closed as it is,
	// its zeros left.
	j.end = max(j.end, fileLen)
	x.publish()
	return x, nil
}

// upgradeHeader rewrites the version of an older header to journalVersion,
// in place (padded with spaces, which JSON allows, when it was written
// longer, such as 1.0), and fsyncs it. It runs before anything is
// appended, so a crash leaves either header over the same records.
func (j *journal) upgradeHeader(h header) error {
	f, err := os.OpenFile(j.path, os.O_WRONLY, 0) // not O_APPEND: WriteAt refuses that
	if err != nil {
		return err
	}
	defer f.Close()
	text := strconv.AppendInt(nil, journalVersion, 10)
	text = append(text, bytes.Repeat([]byte{' '}, h.length-len(text))...)
	if _, err := f.WriteAt(text, int64(h.at)); err != nil {
		return err
	}
	return f.Sync()
}

// isTorn reports whether a line that failed to parse, followed by rest, is
// what a crash leaves when it cuts the last write short: the last line
// without its newline; or a line of the last batch with zeros where data
// was due. Lines are written over zeros in one write per batch, and a
// crash can keep a later page of that write but not an earlier one (and
// a copy made meanwhile can read them so): acknowledged lines never hold a
// zero byte, so the line that holds one and every line after it were
// never acknowledged, as long as no more than a batch follows it. A first
// line must also be a prefix of a header some petstore wrote (of any
// version this one reads), so a file that is not a journal is never cut.
func isTorn(line []byte, complete bool, lineNo int, rest []byte) bool {
	if lineNo == 1 {
		if complete {
			return false
		}
		for v := 1; v <= journalVersion; v++ {
			if strings.HasPrefix(journalHeaderOf(v), string(line)) {
				return true
			}
		}
		return false
	}
	if !complete {
		return true // the last line: nothing follows it
	}
	return bytes.IndexByte(line, 0) >= 0 && bytes.Count(rest, []byte{'\n'}) < maxBatch
}

// dropTornTail sets aside tail, the torn last line that starts at offset, in
// path+".torn", then truncates the journal to offset.
func (j *journal) dropTornTail(tail []byte, offset int64, lineNo int, log *slog.Logger) error {
	tornPath := j.path + ".torn"
	_, statErr := os.Stat(tornPath)
	tf, err := os.OpenFile(tornPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return refuseSymlink(tornPath, err)
	}
	_, err = tf.Write(tail)
	if err == nil {
		err = tf.Sync()
	}
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil && errors.Is(statErr, os.ErrNotExist) {
		err = syncDir(filepath.Dir(tornPath)) // its name, too, before the journal is cut
	}
	if err != nil {
		return fmt.Errorf("saving the torn end of %s: %w", j.path, err)
	}
	if err := j.f.Truncate(offset); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	log.Warn("journal: dropped a torn last line, left by a write that a crash cut short; it was never acknowledged",
		"path", j.path, "line", lineNo, "bytes", len(tail), "saved_to", tornPath)
	j.size = offset
	return nil
}

// header is what checkJournalHeader read: the format version, and where
// its number stands in the line, to rewrite it.
type header struct {
	version    int
	at, length int
}

// checkJournalHeader accepts a header of versions 1 to journalVersion
// however it is spaced or ordered: a JSON object of exactly the members
// format and version. Anything else gets a message that says what is wrong
// with it.
func checkJournalHeader(line []byte) (header, error) {
	if string(line) == journalHeader {
		return header{version: journalVersion, at: len(line) - 2, length: 1}, nil
	}
	// Records after such a header end in \r too. Rather than accept a file
	// a tool has rewritten, and append LF lines to it, petstore asks for it
	// back as it was: the conversion is undone exactly by dos2unix.
	if bytes.HasSuffix(line, []byte{'\r'}) {
		return header{}, errors.New("the header line ends with a carriage return: the file was converted to CRLF line endings; convert it back to LF (e.g. dos2unix) and start again")
	}
	notJournal := errors.New("not a petstore journal: the first line is not its header")
	if !json.Valid(line) {
		return header{}, notJournal
	}
	members, err := objectMembers(line, nil)
	if err != nil {
		return header{}, notJournal
	}
	var format, version []byte
	others := 0
	for _, m := range members {
		switch {
		case m.name == "format" && format == nil:
			format = m.value
		case m.name == "version" && version == nil:
			version = m.value
		default:
			others++
		}
	}
	if format == nil || jsonKind(format) != "string" {
		return header{}, notJournal
	}
	if name, err := jsonString(format); err != nil || name != "petstore-categories" {
		return header{}, notJournal
	}
	if version != nil && jsonKind(version) == "number" {
		n, err := strconv.ParseFloat(string(version), 64)
		if err == nil && (math.Trunc(n) != n || n < 1 || n > journalVersion) {
			return header{}, fmt.Errorf("journal format version %s is not supported by this petstore, which reads versions 1 to %d", version, journalVersion)
		}
		if err == nil && others == 0 {
			// The number's place in the line: version is a slice of it.
			return header{version: int(n), at: cap(line) - cap(version), length: len(version)}, nil
		}
	}
	return header{}, fmt.Errorf("the header is not written as petstore writes it: %s", journalHeader)
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
	members, err := objectMembers(line, make([]member, 0, 3))
	if err != nil {
		return Category{}, nil, errors.New("not a JSON object")
	}
	var c Category
	var sawID, sawName bool
	var idem *keyRecord
	for _, m := range members {
		switch {
		case m.name == "id" && !sawID && jsonKind(m.value) == "number":
			id, ok := parseID(string(m.value))
			if !ok {
				return Category{}, nil, fmt.Errorf("id %s is not a positive integer", m.value)
			}
			c.ID, sawID = id, true
		case m.name == "name" && !sawName && jsonKind(m.value) == "string":
			c.Name, err = jsonString(m.value)
			sawName = err == nil && c.Name != ""
		case m.name == "description" && !c.HasDescription && jsonKind(m.value) == "string":
			c.Description, err = jsonString(m.value)
			c.HasDescription = err == nil
		case m.name == "idempotency" && idem == nil && jsonKind(m.value) == "array":
			if idem, err = parseKeyRecord(m.value); err != nil {
				return Category{}, nil, err
			}
		case m.name == "idempotency" && idem == nil && jsonKind(m.value) == "object":
			if idem, err = parseKeyRecordV2(m.value); err != nil {
				return Category{}, nil, err
			}
		default:
			return Category{}, nil, fmt.Errorf("unexpected member %q", m.name)
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
	elems, err := arrayElements(v)
	if err != nil || len(elems) != 2 || jsonKind(elems[0]) != "string" || jsonKind(elems[1]) != "number" {
		return nil, bad
	}
	text, err := jsonString(elems[0])
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
	members, err := objectMembers(v, make([]member, 0, 3))
	if err != nil || len(members) != 3 {
		return nil, bad
	}
	var r keyRecord
	var request [16]byte
	var seen [3]bool
	hex16 := func(dst []byte, v []byte) bool {
		text, err := jsonString(v)
		if err != nil || len(text) != 2*len(dst) {
			return false // hex.Decode would write past dst
		}
		n, herr := hex.Decode(dst, []byte(text))
		return herr == nil && n == len(dst)
	}
	for _, m := range members {
		switch {
		case m.name == "id" && jsonKind(m.value) == "string" && hex16(r.id[:], m.value):
			seen[0] = true
		case m.name == "request" && jsonKind(m.value) == "string" && hex16(request[:], m.value):
			seen[1] = true
		case m.name == "at" && jsonKind(m.value) == "number":
			ms, err := strconv.ParseInt(string(m.value), 10, 64)
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

// maxCollisionWarnings bounds the warnings of one replay: a file that holds
// many colliding names is summed up after these.
const maxCollisionWarnings = 10

// warnCollisions logs, for each category in later (positions in x), that
// its name equals an earlier one's under this build's case folding, naming
// both lines. It runs only when there are collisions, so finding the
// earlier lines costs one more pass over the names then and nothing
// otherwise. Line numbers follow from positions: the header is line 1 and
// every later line is one category.
func warnCollisions(x *index, path string, later []int, log *slog.Logger) {
	first := make(map[string]int, len(later)) // folded name: position of its first category
	for _, i := range later {
		first[foldName(x.nameAt(i))] = -1
	}
	for i := range x.items {
		key := foldName(x.nameAt(i))
		if f, ok := first[key]; ok && f < 0 {
			first[key] = i
		}
	}
	for n, i := range later {
		if n == maxCollisionWarnings {
			log.Warn("journal: more names are equal ignoring case to earlier ones; all are kept", "path", path, "more", len(later)-n)
			return
		}
		name := x.nameAt(i)
		f := first[foldName(name)]
		log.Warn("journal: two names are equal under this build's comparison of names (the case folding of its Unicode tables, fullwidth forms as ASCII), which the build that wrote them did not make; both are kept, and a new create of either is refused",
			"line", path+":"+strconv.Itoa(i+2), "name", strconv.Quote(name),
			"earlier_line", path+":"+strconv.Itoa(f+2), "earlier_name", strconv.Quote(x.nameAt(f)))
	}
}

// append writes records (whole lines) after the last line and makes them
// durable. If that fails it cuts the file back to its last good length; if
// even that fails, or the sync itself failed (the kernel may have dropped
// the data it reported lost), the journal is marked broken and takes no
// more writes.
func (j *journal) append(records []byte) error {
	if j.broken {
		return errors.New("journal is broken")
	}
	n := int64(len(records))
	j.reserve(n)
	_, err := j.f.WriteAt(records, j.size)
	if err == nil {
		// fdatasync writes the metadata that reading the lines back
		// needs, and only that: over the zeros reserved ahead, none.
		if err = datasync(j.f); err != nil {
			j.broken = true
		}
	}
	if err != nil {
		// The cut must be durable too: a crash before the next fsync
		// could otherwise bring back lines that were answered 500, whose
		// ids later creates take. It drops the zeros ahead as well.
		if terr := j.f.Truncate(j.size); terr != nil || j.f.Sync() != nil {
			j.broken = true
		}
		j.end, j.nextFill = j.size, 0
		return fmt.Errorf("appending to %s: %w", j.path, err)
	}
	j.size += n
	j.end = max(j.end, j.size)
	j.syncs++
	return nil
}

// reserve makes sure the file holds n more bytes after its last line,
// fsynced, by writing reserveAhead zero bytes more at a time.
//
// A line written over such zeros needs only fdatasync: the file's length
// and its blocks are on disk already, so no metadata has to follow the
// data. A line that lengthens the file makes its sync write the inode
// too, and a line that reaches blocks given ahead but never written
// (fallocate) makes it write their conversion. With a create's few dozen
// bytes that is most of what a write costs (see README, Performance).
// Where the zeros cannot be written (a full disk) the journal goes
// without: lines lengthen the file, and fdatasync writes its new length
// too. The next try is reserveAhead bytes later, and the write itself
// reports what matters.
func (j *journal) reserve(n int64) {
	if j.size+n <= j.end || j.size+n <= j.nextFill {
		return
	}
	to := j.size + n + reserveAhead
	if err := j.zeroFill(j.f, j.end, to); err != nil {
		_ = j.f.Truncate(j.end) // give back what part was written
	} else {
		j.end = to
	}
	j.nextFill = to
}

// zeros is what zeroFill writes from.
var zeros [64 << 10]byte

// zeroFill writes zero bytes from byte from to byte to of f, and fsyncs f.
func zeroFill(f *os.File, from, to int64) error {
	for at := from; at < to; {
		n := min(to-at, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:n], at); err != nil {
			return err
		}
		at += n
	}
	return f.Sync()
}

// close closes the file, cutting off the zeros reserved ahead of its last
// line: a journal closed cleanly is JSON Lines and nothing else.
func (j *journal) close() error {
	// end is set once the journal opened: one that did not is left as it
	// is. The file's own length is asked, not end: a fill that failed may
	// have left zeros past end that it could not cut.
	if !j.readOnly && !j.broken && j.end > 0 {
		info, err := j.f.Stat()
		if err == nil && info.Size() != j.size {
			if err = j.f.Truncate(j.size); err == nil {
				err = j.f.Sync()
			}
		}
		if err != nil {
			j.f.Close()
			return fmt.Errorf("cutting the space reserved at the end of %s: %w", j.path, err)
		}
	}
	return j.f.Close()
}

// parseID parses a canonical positive decimal int64: "1", not "+1", "01",
// "-1" or "1.0".
func parseID(s string) (int64, bool) {
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
