package etcd

import (
	"bytes"
	"fmt"
	"strconv"
)

// Int64 is an int64 of etcd's JSON: the gateway writes int64 and uint64 as
// strings ("revision":"2") but accepts numbers, and other versions or
// proxies may write numbers; both decode.
type Int64 int64

// UnmarshalJSON decodes a number or a string of one; null leaves n alone.
func (n *Int64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// uint64 fields (member ids) may exceed int64; keep their bits.
		u, uerr := strconv.ParseUint(s, 10, 64)
		if uerr != nil {
			return fmt.Errorf("etcd: %s is not an integer", b)
		}
		v = int64(u)
	}
	*n = Int64(v)
	return nil
}

// The gateway's JSON shapes (etcd's api/etcdserverpb/rpc.proto). Zero values
// are omitted both ways: a missing key has no kvs and no count, a failed txn
// has no succeeded. Unknown input members are silently ignored by etcd, so
// the tests pin these names.
type (
	// Header is the header of every answer.
	Header struct {
		Revision Int64 `json:"revision"`
		MemberID Int64 `json:"member_id"`
	}
	// KV is one key and its value.
	KV struct {
		Key            []byte `json:"key"` // []byte: standard base64, as etcd wants
		Value          []byte `json:"value"`
		CreateRevision Int64  `json:"create_revision"`
		ModRevision    Int64  `json:"mod_revision"`
	}
	// RangeRequest reads the keys [Key, RangeEnd), or Key alone when
	// RangeEnd is nil; linearizably unless Serializable is set.
	RangeRequest struct {
		Key          []byte `json:"key"`
		RangeEnd     []byte `json:"range_end,omitempty"`
		Limit        int64  `json:"limit,omitempty"`
		Revision     int64  `json:"revision,omitempty"`
		KeysOnly     bool   `json:"keys_only,omitempty"`
		CountOnly    bool   `json:"count_only,omitempty"`
		Serializable bool   `json:"serializable,omitempty"`
	}
	// RangeResponse is the answer to a RangeRequest.
	RangeResponse struct {
		Header Header `json:"header"`
		Kvs    []KV   `json:"kvs"`
		More   bool   `json:"more"`
		Count  Int64  `json:"count"`
	}
	// PutRequest writes one key, in a txn.
	PutRequest struct {
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
		Lease int64  `json:"lease,omitempty"` // the key goes when the lease expires
	}
	leaseGrantRequest struct {
		TTL int64 `json:"TTL"` // seconds
	}
	leaseGrantResponse struct {
		ID  Int64 `json:"ID"`
		TTL Int64 `json:"TTL"`
	}
	// Compare is a condition of a txn. The one of CreateRevision and
	// ModRevision that Target names is sent, zero included, so that the
	// compare never depends on etcd's reading of an absent member.
	Compare struct {
		Target         string `json:"target"` // CREATE, MOD
		Result         string `json:"result"` // EQUAL
		Key            []byte `json:"key"`
		RangeEnd       []byte `json:"range_end,omitempty"` // every key of [Key, RangeEnd) is compared; none compares as 0
		CreateRevision *int64 `json:"create_revision,omitempty"`
		ModRevision    *int64 `json:"mod_revision,omitempty"`
	}
	// Op is one operation of a txn: a put or a range.
	Op struct {
		RequestPut   *PutRequest   `json:"request_put,omitempty"`
		RequestRange *RangeRequest `json:"request_range,omitempty"`
	}
	// TxnRequest applies Success when every Compare holds, else Failure.
	TxnRequest struct {
		Compare []Compare `json:"compare"`
		Success []Op      `json:"success"`
		Failure []Op      `json:"failure"`
	}
	// TxnResponse is the answer to a TxnRequest: the answers of the
	// ranges of the branch applied, in order.
	TxnResponse struct {
		Header    Header `json:"header"`
		Succeeded bool   `json:"succeeded"`
		Responses []struct {
			ResponseRange *RangeResponse `json:"response_range"`
		} `json:"responses"`
	}
)

// PrefixEnd returns the range end that makes a range cover every key that
// starts with prefix: the prefix with its last byte plus one ("c/" → "c0").
func PrefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every key
}
