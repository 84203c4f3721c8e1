// {{name}}: counts the lines and bytes of a file. A toolhost tool component
// (contract toolhost:tool@0.3.0); `toolhost build` builds this package with
// the kit, toolhost.local/guest/kit, for GOOS=wasip1.
package main

import (
	"fmt"
	"os"

	"toolhost.local/guest/kit"
)

// Args are the arguments, decoded from the JSON the host checked against
// InputSchema (strictly: an unknown field is invalid_arguments).
type Args struct {
	Path string `json:"path"`
}

// Counts is the value, checked by the host against OutputSchema.
type Counts struct {
	Path  string `json:"path"`
	Lines int64  `json:"lines"`
	Bytes int64  `json:"bytes"`
}

// Tool is the tool.
var Tool = kit.Define(kit.Descriptor{
	Name:        "{{name}}",
	Description: "Counts the lines and bytes of a file.",
	// The schemas the host checks calls and values against: change them
	// here. additionalProperties: false refuses misspelt arguments.
	InputSchema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
		`"properties":{"path":{"type":"string","minLength":1,` +
		`"description":"The file, relative to the working directory or absolute."}},` +
		`"required":["path"],"additionalProperties":false}`,
	OutputSchema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
		`"properties":{"path":{"type":"string","description":"The file, as given."},` +
		`"lines":{"type":"integer","minimum":0,"description":"Newline characters, plus a last line without one."},` +
		`"bytes":{"type":"integer","minimum":0,"description":"Size in bytes."}},` +
		`"required":["path","lines","bytes"],"additionalProperties":false}`,
	// It changes nothing, and the same file gives the same answer.
	Annotations: kit.Annotations{ReadOnly: true, Idempotent: true},
	// The host checks this argument against the policy's grants first.
	Paths: []kit.PathParam{{Pointer: "/path", Access: kit.Read}},
}, run, render)

func run(a Args) (Counts, error) {
	// Relative paths resolve as the host's checks resolved them: before the
	// first call the kit changes into the host's working directory
	// (/workspace); Go's wasip1 port starts in "/", where nothing is granted.
	f, err := os.Open(a.Path)
	if err != nil {
		return Counts{}, kit.FailPath(err, a.Path) // not_found, is_directory, ...: stable codes
	}
	defer f.Close()
	// A directory opens, and under WASI its reads then fail with EBADF: ask
	// first, so that the caller gets is_directory.
	if info, err := f.Stat(); err == nil && info.IsDir() {
		return Counts{}, kit.Fail("is_directory", "%s is a directory", a.Path)
	}
	lines, bytes, err := count(f)
	if err != nil {
		return Counts{}, kit.FailPath(err, a.Path)
	}
	return Counts{Path: a.Path, Lines: lines, Bytes: bytes}, nil
}

// render is what the model reads. Pure: it runs in a fresh instance, from
// the value.
func render(a Args, v Counts) []kit.Content {
	return []kit.Content{kit.Text(fmt.Sprintf("%d lines, %d bytes in %s", v.Lines, v.Bytes, v.Path))}
}

func init() { kit.Serve(Tool) } // every tool of the component, once

func main() {} // never called: the component is a reactor
