package catalog

import "io"

// Writing a JSON array in as few writes as net/http allows. net/http passes
// each Write of a handler through its buffers; after a large Write has gone
// to the connection, a second Write of a few bytes (the closing "]") goes
// out in a system call and a TCP segment of its own. The whole list, up
// to ClosedLimit bytes, is kept closed by its snapshot (one copy per
// Publish) and written in one Write. A page or a look-up of up to JoinLimit
// bytes is copied whole into one buffer and written in one Write, as a
// server writing prepared bytes would: the copy costs less than the system
// call it saves. A larger one is written without a copy of its middle, its
// brackets each copied with EdgeSize bytes of the items beside them, so
// that no write is of a few bytes: three Writes. The copy is
// held while its Write waits on the client, so JoinLimit stays small: a
// client that does not read its answers pins at most that much per answer
// under way (per HTTP/2 stream).

const (
	// ClosedLimit is the largest list a snapshot keeps closed.
	ClosedLimit = 64 << 10
	// JoinLimit is the largest page copied to be written in one Write.
	JoinLimit = 16 << 10
	// EdgeSize is how many bytes of a larger array go with each bracket.
	EdgeSize = 4 << 10
)

// WriteArray writes "[", items (JSON values joined by commas, or nothing)
// and "]" to w.
func WriteArray(w io.Writer, items []byte) (int64, error) {
	// A buffer of this answer's own, never shared: over HTTP/2, a Write
	// can return on a reset stream while its frame still reads the bytes.
	if len(items)+2 <= JoinLimit {
		buf := append(append(append(make([]byte, 0, len(items)+2), '['), items...), ']')
		n, err := w.Write(buf)
		return int64(n), err
	}
	buf := make([]byte, 0, 2*EdgeSize+2)
	opening := append(append(buf, '['), items[:EdgeSize]...)
	closing := append(append(buf[len(opening):len(opening)], items[len(items)-EdgeSize:]...), ']')
	var total int64
	for _, p := range [...][]byte{opening, items[EdgeSize : len(items)-EdgeSize], closing} {
		n, err := w.Write(p)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
