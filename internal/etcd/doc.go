// Package etcd is a client for etcd v3's JSON gateway (POST /v3/…), written
// with net/http and encoding/json only. It knows nothing of what is stored:
// keys and values are bytes.
//
// It is honest about failure. Every call has a deadline (Client.Timeout per
// request to one endpoint). A request that cannot have reached etcd (a
// refused connection) goes to the next endpoint, and so does a read that
// failed in any transient way (timeout, connection lost, 503, 504). A write
// that failed after it was sent has an unknown outcome: the client says so
// (ErrUnknownOutcome) and leaves the settling to its caller, which knows how
// to read the outcome back. A 4xx is final (*GatewayError), except 401,
// after which the client authenticates again once. An answer longer than
// MaxAnswer is refused (ErrAnswerTooLarge) rather than read whole.
//
// Backoff is the one retry pause of the client and of its callers.
//
// docs/cluster.md describes how petstore uses etcd.
package etcd
