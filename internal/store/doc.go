// Package store keeps the categories of the catalogue: in memory
// (NewMemory), in a journal file (OpenJournal) or in an etcd cluster
// (OpenEtcd). Every store is safe for concurrent use and has the same
// methods: List returns an immutable snapshot of the encoded list and never
// waits for a write; Get returns one category's JSON; Create returns once
// the category is as durable as the store makes it; Health says, without
// waiting, why creates cannot be taken now; Close waits for the creates
// under way and refuses later ones.
//
// Creates share one durable write (a journal append and sync, or one etcd
// txn) when they arrive together: group commit. A create with an
// Idempotency-Key stores the key in that same write and takes the one
// keyed-create path of every store: a key already done is answered again
// when the request is the same and refused (catalog.ErrKeyReused) when it
// is not; a key whose create is under way is refused
// (catalog.ErrKeyInUse). See docs/api.md, "Safe retries".
//
// Stores return the errors of internal/catalog (catalog.ErrNotFound,
// catalog.ErrNameTaken, catalog.ErrUnavailable …) and speak no HTTP.
//
// Export and Import move categories out of a store as a journal, and from
// a journal into an empty etcd prefix (docs/data.md, "Export and import").
package store
