package main

import (
	"fmt"
	"go/format"
	"strings"

	"toolhost.local/guest/kit"
)

// FormatArgs are go_format's arguments.
type FormatArgs struct {
	Path string `json:"path"`
	// Context is the number of unchanged lines around each change in the
	// diff (default 3).
	Context *int `json:"context"`
}

// FormatValue is go_format's canonical value.
type FormatValue struct {
	Path string `json:"path"`
	// Formatted: the file is already what gofmt prints.
	Formatted bool `json:"formatted"`
	// Removed and Added count the lines of the diff.
	Removed int `json:"removed"`
	Added   int `json:"added"`
	// Diff is a unified diff from the file to gofmt's output ("" when
	// formatted), clipped to maxDiff bytes.
	Diff      string `json:"diff"`
	Truncated bool   `json:"truncated"`
}

// maxDiff bounds the diff returned.
const maxDiff = 64 << 10

// Format is the go_format tool.
var Format = kit.Define(kit.Descriptor{
	Name:  "go_format",
	Title: "Check gofmt formatting",
	Description: "Checks whether a Go source file is formatted as gofmt formats it. When it is " +
		"not, returns the unified diff (a/ is the file, b/ gofmt's output) that would format " +
		"it, which an edit can apply. The file is not changed. A file with syntax errors " +
		"fails with syntax_error and the errors in info.",
	InputSchema: `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"The .go file, relative to the workspace."},` +
		`"context":{"type":"integer","minimum":0,"maximum":20,"description":"Unchanged lines around each change in the diff (default 3)."}` +
		`},"required":["path"],"additionalProperties":false}`,
	OutputSchema: `{"type":"object","properties":{` +
		`"path":{"type":"string"},"formatted":{"type":"boolean"},` +
		`"removed":{"type":"integer","minimum":0},"added":{"type":"integer","minimum":0},` +
		`"diff":{"type":"string"},"truncated":{"type":"boolean"}` +
		`},"required":["path","formatted","removed","added","diff","truncated"]}`,
	Annotations: kit.Annotations{ReadOnly: true, Idempotent: true},
	Paths:       []kit.PathParam{{Pointer: "/path", Access: kit.Read}},
}, formatCheck, renderFormat)

func formatCheck(a FormatArgs) (FormatValue, error) {
	src, err := readSource(a.Path)
	if err != nil {
		return FormatValue{}, err
	}
	out, err := formatSource(src)
	if err != nil {
		errs := syntaxErrors(err)
		return FormatValue{}, kit.Fail("syntax_error", "%s does not parse: %s", a.Path, errs[0].Message).
			WithInfo(map[string]any{"errors": errs})
	}
	v := FormatValue{Path: a.Path, Formatted: string(out) == string(src), Diff: ""}
	if v.Formatted {
		return v, nil
	}
	context := 3
	if a.Context != nil {
		context = *a.Context
	}
	d := unifiedDiff("a/"+a.Path, "b/"+a.Path, splitLines(string(src)), splitLines(string(out)), context)
	v.Removed, v.Added = d.removed, d.added
	v.Diff = d.text
	if len(v.Diff) > maxDiff {
		cut := strings.LastIndexByte(v.Diff[:maxDiff], '\n') + 1
		v.Diff, v.Truncated = v.Diff[:cut], true
	}
	return v, nil
}

func renderFormat(a FormatArgs, v FormatValue) []kit.Content {
	if v.Formatted {
		return []kit.Content{kit.Text(v.Path + " is gofmt-clean.")}
	}
	text := fmt.Sprintf("%s is not gofmt-clean: -%d +%d lines.\n```diff\n%s```", v.Path, v.Removed, v.Added, v.Diff)
	if v.Truncated {
		text += fmt.Sprintf("\n(the diff is cut at %d KiB)", maxDiff>>10)
	}
	return []kit.Content{kit.Text(text)}
}

// formatSource is gofmt on one file's source.
func formatSource(src []byte) ([]byte, error) { return format.Source(src) }
