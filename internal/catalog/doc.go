// Package catalog is what a category is, apart from any store or protocol:
// Category and the validated create request (NewCategory), with the one
// function that makes a Category of a request (WithID) and the one test
// of a retry (SameAs); the name and description rules for requests
// (CheckName, CheckDescription), each returning the message a client is
// given or "", with CodePoint, the way those messages show a character;
// name folding and the id syntax; the encoded index that every store keeps
// its categories in, and its immutable snapshots; the record codec of every
// journal format version; and the errors of the domain, which carry no
// HTTP status and no client message.
//
// The rules are for requests only: replay keeps every name and description
// an earlier version stored. An Index has one writer at a time; Snapshots
// never change and are safe for concurrent use. Everything else is a value
// or a pure function.
package catalog
