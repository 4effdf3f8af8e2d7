// Package openapi builds the service's OpenAPI 3.1 document and derives its
// OpenAPI 3.0.3 form. It speaks no HTTP and knows no route table: the
// service describes each of its operations as an Operation (method, path,
// key scope, deprecation, stability) and gives the table of its error codes.
//
// Build completes those with static.json, embedded: the schemas, servers and
// wording, and each operation's own summary, parameters and responses. It
// refuses a list of operations that static.json does not describe exactly,
// one for one, so that the document cannot drift from what is served. What
// every operation answers besides its own responses (400, 405 and 500; for
// one that needs a key 401, 403 naming its scope and 429; 410 once
// deprecated) and the headers of those answers are added by Build, as are
// the Error schema's codes with the status of each.
//
// Convert30 rewrites a 3.1 document in OpenAPI 3.0.3 and the JSON Schema
// subset it knows, for generators that read only 3.0 (docs/api.md, "Other
// operations"). Both write the document indented, its top-level members in
// the order a reader expects; the same input gives the same bytes.
package openapi
