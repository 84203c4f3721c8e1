// A one-tool component to copy when starting a new Go tool:
//
//	cp -r guest-tools/go/tools/template guest-tools/go/tools/mytool
//	guest-tools/go/build.sh target/go-guests/tool_mytool.wasm mytool
//
// count_lines counts the lines and bytes of a file in a granted directory.
// On a large file it reports progress (bytes read of the file's size) after
// each mebibyte, and stops when the caller cancelled (the contract's
// context: kit.Progress, kit.Cancelled).
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"toolhost.local/guest/kit"
)

// Args are the arguments, decoded from the JSON the host validated
// against InputSchema.
type Args struct {
	Path string `json:"path"`
}

// Value is the canonical value; the host validates it against
// OutputSchema.
type Value struct {
	Path  string `json:"path"`
	Lines int    `json:"lines"`
	Bytes int64  `json:"bytes"`
}

// CountLines is the tool.
var CountLines = kit.Define(kit.Descriptor{
	Name:        "count_lines",
	Title:       "Count lines",
	Description: "Counts the lines and bytes of a file.",
	InputSchema: `{"type":"object","properties":{"path":{"type":"string"}},` +
		`"required":["path"],"additionalProperties":false}`,
	OutputSchema: `{"type":"object","properties":{"path":{"type":"string"},` +
		`"lines":{"type":"integer","minimum":0},"bytes":{"type":"integer","minimum":0}},` +
		`"required":["path","lines","bytes"]}`,
	Annotations: kit.Annotations{ReadOnly: true, Idempotent: true},
	// Every path argument is declared: the host checks it against the
	// policy's grants before the tool runs.
	Paths: []kit.PathParam{{Pointer: "/path", Access: kit.Read}},
}, countLines, render)

// progressEvery is how many bytes count_lines reads between two progress
// reports (and checks for cancellation): the host bounds what a call
// reports, so not every line.
const progressEvery = 1 << 20

func countLines(a Args) (Value, error) {
	f, err := os.Open(a.Path) // relative paths: the kit starts in the host's working directory
	if err != nil {
		return Value{}, kit.FailPath(err, a.Path) // not_found, is_directory, ...
	}
	defer f.Close()
	size := kit.TotalUnknown
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
		size = uint64(info.Size())
	}
	r := bufio.NewReaderSize(f, 64<<10)
	v := Value{Path: a.Path}
	last := byte('\n')
	next := int64(progressEvery)
	for {
		chunk, err := r.ReadSlice('\n')
		v.Bytes += int64(len(chunk))
		if v.Bytes >= next {
			next = v.Bytes + progressEvery
			if kit.Cancelled() { // the caller cancelled: stop cleanly
				return Value{}, kit.Fail("cancelled", "cancelled after %d bytes of %s", v.Bytes, a.Path)
			}
			kit.Progress(uint64(v.Bytes), size, "bytes read")
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
			if last == '\n' {
				v.Lines++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return Value{}, kit.FailPath(err, a.Path)
		}
	}
	if last != '\n' {
		v.Lines++ // a last line without a newline
	}
	return v, nil
}

// render is what the model reads (nil in Define: the host renders).
func render(a Args, v Value) []kit.Content {
	return []kit.Content{kit.Text(fmt.Sprintf("%s: %d lines, %d bytes", v.Path, v.Lines, v.Bytes))}
}

func init() { kit.Serve(CountLines) }

func main() {}
