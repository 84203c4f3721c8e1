package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"strconv"
	"strings"

	"toolhost.local/guest/kit"
)

// OutlineArgs are go_outline's arguments.
type OutlineArgs struct {
	Path         string `json:"path"`
	ExportedOnly bool   `json:"exported_only"`
	// Limit is the most declarations listed (default defaultLimit).
	Limit *int `json:"limit"`
}

// defaultLimit is how many declarations go_outline lists by default.
const defaultLimit = 500

// Import is one import of the file.
type Import struct {
	Path string  `json:"path"`
	Name *string `json:"name"`
	Line int     `json:"line"`
}

// Decl is one top-level declaration.
type Decl struct {
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Receiver  *string `json:"receiver"`
	Signature string  `json:"signature"`
	Line      int     `json:"line"`
	EndLine   int     `json:"end_line"`
	Exported  bool    `json:"exported"`
	Doc       *string `json:"doc"`
}

// OutlineValue is go_outline's canonical value.
type OutlineValue struct {
	Path    string   `json:"path"`
	Package string   `json:"package"`
	Lines   int      `json:"lines"`
	Imports []Import `json:"imports"`
	Decls   []Decl   `json:"decls"`
	// DeclsTotal counts every declaration that matched; Truncated says
	// that Decls stops at the limit.
	DeclsTotal   int           `json:"decls_total"`
	Truncated    bool          `json:"truncated"`
	SyntaxErrors []SyntaxError `json:"syntax_errors"`
}

// Outline is the go_outline tool.
var Outline = kit.Define(kit.Descriptor{
	Name:  "go_outline",
	Title: "Outline a Go file",
	Description: "Lists the package, imports and top-level declarations of a Go source file " +
		"(functions, methods with their receivers, types, constants, variables), each with " +
		"a one-line signature, its line range and the first line of its doc comment. A file " +
		"with syntax errors is outlined as far as it parses, and the errors are listed. At most " +
		"`limit` declarations are listed (default 500), in source order.",
	InputSchema: `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"The .go file, relative to the workspace."},` +
		`"exported_only":{"type":"boolean","description":"Only exported declarations (default false)."},` +
		`"limit":{"type":"integer","minimum":1,"maximum":5000,"description":"The most declarations listed (default 500)."}` +
		`},"required":["path"],"additionalProperties":false}`,
	OutputSchema: `{"type":"object","properties":{` +
		`"path":{"type":"string"},"package":{"type":"string"},"lines":{"type":"integer","minimum":0},` +
		`"imports":{"type":"array","items":{"type":"object","properties":{` +
		`"path":{"type":"string"},"name":{"type":["string","null"]},"line":{"type":"integer"}},` +
		`"required":["path","name","line"]}},` +
		`"decls":{"type":"array","items":{"type":"object","properties":{` +
		`"kind":{"enum":["func","method","type","const","var"]},"name":{"type":"string"},` +
		`"receiver":{"type":["string","null"]},"signature":{"type":"string"},` +
		`"line":{"type":"integer"},"end_line":{"type":"integer"},"exported":{"type":"boolean"},` +
		`"doc":{"type":["string","null"]}},` +
		`"required":["kind","name","receiver","signature","line","end_line","exported","doc"]}},` +
		`"decls_total":{"type":"integer","minimum":0},"truncated":{"type":"boolean"},` +
		`"syntax_errors":{"type":"array","items":{"type":"object","properties":{` +
		`"line":{"type":"integer"},"column":{"type":"integer"},"message":{"type":"string"}},` +
		`"required":["line","column","message"]}}` +
		`},"required":["path","package","lines","imports","decls","decls_total","truncated","syntax_errors"]}`,
	Annotations: kit.Annotations{ReadOnly: true, Idempotent: true},
	Paths:       []kit.PathParam{{Pointer: "/path", Access: kit.Read}},
}, outline, renderOutline)

// maxSignature bounds a one-line signature.
const maxSignature = 200

func outline(a OutlineArgs) (OutlineValue, error) {
	src, err := readSource(a.Path)
	if err != nil {
		return OutlineValue{}, err
	}
	fset := token.NewFileSet()
	file, perr := parser.ParseFile(fset, a.Path, src, parser.ParseComments|parser.SkipObjectResolution)
	v := OutlineValue{
		Path: a.Path, Lines: lineCount(src),
		Imports: []Import{}, Decls: []Decl{}, SyntaxErrors: syntaxErrors(perr),
	}
	if file == nil {
		return v, nil
	}
	if file.Name != nil {
		v.Package = file.Name.Name
	}
	for _, imp := range file.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			path = imp.Path.Value
		}
		i := Import{Path: path, Line: line(fset, imp.Pos())}
		if imp.Name != nil {
			i.Name = &imp.Name.Name
		}
		v.Imports = append(v.Imports, i)
	}
	limit := defaultLimit
	if a.Limit != nil {
		limit = *a.Limit
	}
	for _, d := range file.Decls {
		// Signatures are printed only for the declarations listed: the
		// rest are counted.
		for _, decl := range declsOf(fset, d, len(v.Decls) < limit) {
			if a.ExportedOnly && !decl.Exported {
				continue
			}
			v.DeclsTotal++
			if len(v.Decls) < limit {
				v.Decls = append(v.Decls, decl)
			} else {
				v.Truncated = true
			}
		}
	}
	return v, nil
}

// declsOf lists the declarations of d; their signatures only when print
// is set.
func declsOf(fset *token.FileSet, d ast.Decl, print bool) []Decl {
	node := func(fset *token.FileSet, n ast.Node) string {
		if !print {
			return ""
		}
		return node(fset, n)
	}
	switch d := d.(type) {
	case *ast.FuncDecl:
		decl := Decl{
			Kind: "func", Name: d.Name.Name, Exported: d.Name.IsExported(),
			Line: line(fset, d.Pos()), EndLine: line(fset, d.End()), Doc: firstLine(d.Doc),
		}
		if d.Recv != nil && len(d.Recv.List) > 0 {
			decl.Kind = "method"
			recv := node(fset, d.Recv.List[0].Type)
			decl.Receiver = &recv
		}
		header := *d
		header.Body, header.Doc = nil, nil
		decl.Signature = node(fset, &header)
		return []Decl{decl}
	case *ast.GenDecl:
		var out []Decl
		for _, spec := range d.Specs {
			doc := firstLine(d.Doc)
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Doc != nil {
					doc = firstLine(s.Doc)
				}
				out = append(out, Decl{
					Kind: "type", Name: s.Name.Name, Exported: s.Name.IsExported(),
					Signature: "type " + node(fset, typeHeader(s)),
					Line:      line(fset, s.Pos()), EndLine: line(fset, s.End()), Doc: doc,
				})
			case *ast.ValueSpec:
				if s.Doc != nil {
					doc = firstLine(s.Doc)
				}
				kind := strings.ToLower(d.Tok.String())
				for _, name := range s.Names {
					if name.Name == "_" {
						continue
					}
					sig := kind + " " + name.Name
					if s.Type != nil {
						sig += " " + node(fset, s.Type)
					}
					out = append(out, Decl{
						Kind: kind, Name: name.Name, Exported: name.IsExported(),
						Signature: clip(sig), Line: line(fset, s.Pos()), EndLine: line(fset, s.End()), Doc: doc,
					})
				}
			}
		}
		return out
	}
	return nil // *ast.BadDecl: reported among the syntax errors
}

// typeHeader is a type spec with its body summarised: struct and interface
// bodies are left out (`type T struct{...}`), other types kept.
func typeHeader(s *ast.TypeSpec) ast.Node {
	h := *s
	h.Doc, h.Comment = nil, nil
	switch t := s.Type.(type) {
	case *ast.StructType:
		h.Type = &ast.Ident{Name: fmt.Sprintf("struct{...} /* %d fields */", fieldCount(t.Fields))}
	case *ast.InterfaceType:
		h.Type = &ast.Ident{Name: fmt.Sprintf("interface{...} /* %d methods */", fieldCount(t.Methods))}
	}
	return &h
}

func fieldCount(fl *ast.FieldList) int {
	if fl == nil {
		return 0
	}
	n := 0
	for _, f := range fl.List {
		n += max(1, len(f.Names))
	}
	return n
}

// node prints n on one line (runs of white space become one space),
// clipped to maxSignature bytes.
func node(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	if err := (&printer.Config{Mode: printer.RawFormat}).Fprint(&b, fset, n); err != nil {
		return "?"
	}
	return clip(strings.Join(strings.Fields(b.String()), " "))
}

func clip(s string) string {
	if len(s) <= maxSignature {
		return s
	}
	cut := maxSignature
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func firstLine(cg *ast.CommentGroup) *string {
	if cg == nil {
		return nil
	}
	text := strings.TrimSpace(cg.Text())
	if text == "" {
		return nil
	}
	first, _, _ := strings.Cut(text, "\n")
	first = clip(first)
	return &first
}

func renderOutline(a OutlineArgs, v OutlineValue) []kit.Content {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: package %s, %d lines", v.Path, v.Package, v.Lines)
	if len(v.Imports) > 0 {
		paths := make([]string, len(v.Imports))
		for i, imp := range v.Imports {
			paths[i] = imp.Path
		}
		fmt.Fprintf(&b, "\nimports: %s", strings.Join(paths, ", "))
	}
	if len(v.Decls) == 0 {
		b.WriteString("\n(no declarations)")
	}
	for _, d := range v.Decls {
		fmt.Fprintf(&b, "\n%d-%d  %s", d.Line, d.EndLine, d.Signature)
		if d.Doc != nil {
			fmt.Fprintf(&b, "  // %s", *d.Doc)
		}
	}
	if v.Truncated {
		fmt.Fprintf(&b, "\n… %d more declarations (limit %d)", v.DeclsTotal-len(v.Decls), len(v.Decls))
	}
	for _, e := range v.SyntaxErrors {
		fmt.Fprintf(&b, "\nsyntax error at %d:%d: %s", e.Line, e.Column, e.Message)
	}
	return []kit.Content{kit.Text(b.String())}
}
