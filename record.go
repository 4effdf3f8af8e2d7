package main

import "petstore/internal/journal"

// exportHeader starts what -export writes: categories only, no keys, so
// version 1, which every petstore reads (this one upgrades it when it
// opens the file). See docs/data.md, "Journal format".
var exportHeader = journal.Header(1)
