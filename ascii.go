package main

import "petstore/internal/ascii"

// The character sets of main's validators; read only.
var (
	// requestIDChars may form an X-Request-Id petstore echoes and logs.
	requestIDChars = ascii.SetOf(ascii.Letters, ascii.Digits, "-._:")
	// sfTokenStart and sfTokenChars make a structured-field token
	// (RFC 9651 section 3.3.4): a letter or "*", then tchar, ":" or "/".
	sfTokenStart = ascii.SetOf(ascii.Letters, "*")
	sfTokenChars = ascii.SetOf(ascii.Letters, ascii.Digits, "!#$%&'*+-.^_`|~:/")
	// printableASCII is space to "~": what a structured-field string holds.
	printableASCII = ascii.Range(' ', '~')
)
