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
// that no write is of a few bytes: two Writes when the items are already
// opened by "[" (the whole list), three otherwise (a page). The buffer is
// held while its Write waits on the client, so JoinLimit stays small: a
// client that does not read its answers pins at most that much per
// connection.

const (
	// ClosedLimit is the largest list a snapshot keeps closed.
	ClosedLimit = 64 << 10
	// JoinLimit is the largest page copied to be written in one Write.
	JoinLimit = 16 << 10
	// EdgeSize is how many bytes of a larger array go with each bracket.
	EdgeSize = 4 << 10
)

// arrayBufs keeps up to 64 buffers of writeArray between answers, each of
// up to JoinLimit bytes: a channel rather than a sync.Pool, which the
// collector empties and the race detector drops from at random, so that a
// page costs the same allocations whatever its size.
var arrayBufs = make(chan *[]byte, 64)

func getArrayBuf() *[]byte {
	select {
	case bp := <-arrayBufs:
		return bp
	default:
		b := make([]byte, 0, 2*EdgeSize+2)
		return &b
	}
}

func putArrayBuf(bp *[]byte) {
	select {
	case arrayBufs <- bp:
	default: // enough kept
	}
}

// WriteArray writes "[", items (JSON values joined by commas, or nothing)
// and "]" to w.
func WriteArray(w io.Writer, items []byte) (int64, error) { return writeArray(w, false, items) }

// writeArray writes the JSON array of items and its brackets to w; opened
// says items already begin with "[".
func writeArray(w io.Writer, opened bool, items []byte) (int64, error) {
	bp := getArrayBuf()
	defer putArrayBuf(bp)
	buf := (*bp)[:0]
	if len(items)+2 <= JoinLimit {
		if !opened {
			buf = append(buf, '[')
		}
		buf = append(append(buf, items...), ']')
		*bp = buf[:0]
		n, err := w.Write(buf)
		return int64(n), err
	}
	if cap(buf) < 2*EdgeSize+2 {
		buf = make([]byte, 0, 2*EdgeSize+2)
		*bp = buf
	}
	var parts [3][]byte // the opening with the first bytes, the middle, the last bytes with "]"
	body, tail := items[:len(items)-EdgeSize], items[len(items)-EdgeSize:]
	if !opened {
		parts[0] = append(append(buf, '['), body[:EdgeSize]...)
		body = body[EdgeSize:]
	}
	parts[1] = body
	parts[2] = append(append(buf[len(parts[0]):len(parts[0])], tail...), ']')
	var total int64
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		n, err := w.Write(p)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
