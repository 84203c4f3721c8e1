// The gosource component: tools over Go source files in a granted
// directory, built on Go's own parser and printer (go/parser, go/ast,
// go/format), which is the reason to write them in Go.
//
//   - go_outline: the package, imports and top-level declarations of a file
//     (kind, name, receiver, one-line signature, lines, first doc line),
//     with the syntax errors when the file does not parse.
//   - go_format: whether a file is gofmt-clean, and the unified diff that
//     would make it so.
package main

import "toolhost.local/guest/kit"

func init() {
	kit.Serve(Outline, Format)
}

// main is never called: the component is a reactor, and the host calls
// the exports. GOOS=wasip1 -buildmode=c-shared still wants it.
func main() {}
