package main

import (
	"errors"
	"go/scanner"
	"go/token"
	"io"
	"os"
	"unicode/utf8"

	"toolhost.local/guest/kit"
)

// maxSource bounds what a tool reads (1 MiB; generated files aside, Go
// files are far smaller): larger files are refused with
// too_large rather than parsed.
const maxSource = 1 << 20

// readSource reads a Go source file (at most maxSource bytes).
func readSource(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, kit.FailPath(err, path)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil {
		return nil, kit.FailPath(err, path)
	} else if info.IsDir() {
		return nil, kit.Fail("is_directory", "%s is a directory", path)
	}
	src, err := io.ReadAll(io.LimitReader(f, maxSource+1))
	if err != nil {
		return nil, kit.FailPath(err, path)
	}
	if len(src) > maxSource {
		return nil, kit.Fail("too_large", "%s is larger than %d bytes", path, maxSource).
			WithInfo(map[string]int{"limit": maxSource})
	}
	if !utf8.Valid(src) {
		return nil, kit.Fail("not_utf8", "%s is not UTF-8 text (Go source is UTF-8)", path)
	}
	return src, nil
}

// SyntaxError is one error of the parser, at a 1-based line and column.
type SyntaxError struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// maxErrors bounds the syntax errors reported (the parser stops at 10
// anyway unless asked for all).
const maxErrors = 10

func syntaxErrors(err error) []SyntaxError {
	out := []SyntaxError{}
	var list scanner.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			if len(out) == maxErrors {
				break
			}
			out = append(out, SyntaxError{Line: e.Pos.Line, Column: e.Pos.Column, Message: e.Msg})
		}
		return out
	}
	if err != nil {
		out = append(out, SyntaxError{Line: 0, Column: 0, Message: err.Error()})
	}
	return out
}

func lineCount(src []byte) int {
	n := 0
	for _, b := range src {
		if b == '\n' {
			n++
		}
	}
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

func line(fset *token.FileSet, pos token.Pos) int { return fset.Position(pos).Line }
