package catalog

import "crypto/sha256"

// KeyID names an Idempotency-Key within the API key that sent it: the
// first 16 bytes of the SHA-256 of the scope and the key's text. Stores
// keep it instead of the text: short whatever the key's length, and no
// client's key on disk.
//
// Journals written when the scope was the API key's 8-hex fingerprint hold
// ids of that older form. They are read as before, but no request names
// them any more: their keys lapse with the upgrade rather than at their
// TTL. That is the safe side: a retry across the upgrade is processed
// afresh (names are unique, so it gets a conflict, never a second
// category), while honouring the old form would keep letting a key of the
// same fingerprint answer for another's retries until the last old key
// expires.
type KeyID [16]byte

// IdempotencyKey is a create's Idempotency-Key as a store keeps it: scoped
// to the API key that sent it. Make one with NewIdempotencyKey, which names
// it: a literal would leave ID zero.
//
// The scope is the whole digest of the API key, not a short fingerprint of
// it: 32 bits are few enough that another client could hold a key of the
// same fingerprint, and so answer or block this one's retries.
type IdempotencyKey struct {
	Scope [sha256.Size]byte // the SHA-256 of the API key
	Text  string            // the key as the client sent it
	ID    KeyID
}

// maxKeyText is the longest key text named without an allocation; the
// HTTP layer refuses longer ones (docs/api.md, "Safe retries").
const maxKeyText = 255

// NewIdempotencyKey returns the key text sent with the API key whose
// SHA-256 is scope.
func NewIdempotencyKey(scope [sha256.Size]byte, text string) *IdempotencyKey {
	var buf [sha256.Size + 1 + maxKeyText]byte
	b := append(append(append(buf[:0], scope[:]...), 0), text...)
	sum := sha256.Sum256(b)
	return &IdempotencyKey{Scope: scope, Text: text, ID: KeyID(sum[:16])}
}
