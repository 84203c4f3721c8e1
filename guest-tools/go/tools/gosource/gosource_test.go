package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"toolhost.local/guest/kit"
)

// call runs a tool through the kit's dispatch, as the component does.
func call(t *testing.T, tool string, args any) (map[string]any, *kit.Failure) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out, f := kit.Execute(tool, raw)
	if f != nil {
		return nil, f
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("value is not JSON: %v", err)
	}
	return v, nil
}

func TestToolsetIsValid(t *testing.T) {
	if err := kit.Check([]kit.Tool{Outline, Format}); err != nil {
		t.Fatal(err)
	}
}

func TestOutlineListsDeclarations(t *testing.T) {
	v, f := call(t, "go_outline", map[string]any{"path": "testdata/sample.go"})
	if f != nil {
		t.Fatal(f)
	}
	if v["package"] != "shapes" || v["lines"] != 48.0 {
		t.Fatalf("%v %v", v["package"], v["lines"])
	}
	imports := v["imports"].([]any)
	if len(imports) != 2 || imports[1].(map[string]any)["name"] != "m" || imports[0].(map[string]any)["name"] != nil {
		t.Fatalf("imports %v", imports)
	}
	var got []string
	for _, d := range v["decls"].([]any) {
		d := d.(map[string]any)
		got = append(got, fmt.Sprintf("%s %s %v-%v %v", d["kind"], d["signature"], d["line"], d["end_line"], d["exported"]))
	}
	want := []string{
		"const const Pi 10-10 true",
		"const const small 13-13 false",
		"const const Big int 15-15 true",
		"const const Bigger int 15-15 true",
		"var var registry 18-18 false",
		"type type Shape interface{...} /* 2 methods */ 21-24 true",
		"type type Circle struct{...} /* 3 fields */ 27-30 true",
		"type type Alias = Circle 32-32 true",
		"method func (c *Circle) Area() float64 37-37 true",
		"method func (c Circle) String() string 39-41 true",
		"func func New[T ~float64](r T) *Circle 44-46 true",
		"func func helper() 48-48 false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	decls := v["decls"].([]any)
	area := decls[8].(map[string]any)
	if area["receiver"] != "*Circle" || area["doc"] != "Area of the circle." {
		t.Fatalf("%v", area)
	}
	if decls[2].(map[string]any)["doc"] != "Big is big." || decls[0].(map[string]any)["doc"] != "Pi is a constant." {
		t.Fatalf("value docs: %v", decls[:3])
	}
	if len(v["syntax_errors"].([]any)) != 0 {
		t.Fatalf("%v", v["syntax_errors"])
	}
}

func TestOutlineExportedOnly(t *testing.T) {
	v, _ := call(t, "go_outline", map[string]any{"path": "testdata/sample.go", "exported_only": true})
	for _, d := range v["decls"].([]any) {
		if d.(map[string]any)["exported"] != true {
			t.Fatalf("%v", d)
		}
	}
	if len(v["decls"].([]any)) != 9 { // String is exported too
		t.Fatalf("%d", len(v["decls"].([]any)))
	}
}

func TestOutlineOfABrokenFileListsItsErrors(t *testing.T) {
	v, f := call(t, "go_outline", map[string]any{"path": "testdata/broken.go"})
	if f != nil {
		t.Fatal(f)
	}
	errs := v["syntax_errors"].([]any)
	if len(errs) == 0 || errs[0].(map[string]any)["line"] != 5.0 {
		t.Fatalf("%v", errs)
	}
	if v["package"] != "broken" || len(v["decls"].([]any)) == 0 {
		t.Fatalf("the parsed part is outlined: %v", v)
	}
}

func TestToolFailures(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.go")
	if err := os.WriteFile(big, []byte("package x\n//"+strings.Repeat("x", maxSource)), 0o644); err != nil {
		t.Fatal(err)
	}
	latin1 := filepath.Join(dir, "latin1.go")
	if err := os.WriteFile(latin1, []byte("package x\n// caf\xe9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ tool, path, code string }{
		{"go_outline", "testdata/missing.go", "not_found"},
		{"go_outline", "testdata", "is_directory"},
		{"go_format", big, "too_large"},
		{"go_format", latin1, "not_utf8"},
		{"go_format", "testdata/broken.go", "syntax_error"},
	}
	for _, c := range cases {
		_, f := call(t, c.tool, map[string]any{"path": c.path})
		if f == nil || f.Code != c.code {
			t.Errorf("%s %s: %v, want %s", c.tool, c.path, f, c.code)
		}
	}
	_, f := call(t, "go_format", map[string]any{"path": "testdata/broken.go"})
	info, _ := f.InfoJSON()
	if !strings.Contains(info, `"line":5`) {
		t.Fatalf("the errors are in info: %s", info)
	}
}

func TestFormatCleanAndDirty(t *testing.T) {
	v, f := call(t, "go_format", map[string]any{"path": "testdata/sample.go"})
	if f != nil || v["formatted"] != true || v["diff"] != "" {
		t.Fatalf("%v %v", v, f)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ugly.go")
	ugly := "package x\nimport \"fmt\"\nfunc  f( ) {\nfmt.Println( 1 )\n}\n"
	if err := os.WriteFile(path, []byte(ugly), 0o644); err != nil {
		t.Fatal(err)
	}
	v, f = call(t, "go_format", map[string]any{"path": path, "context": 1})
	if f != nil {
		t.Fatal(f)
	}
	want := "--- a/" + path + "\n+++ b/" + path + "\n" +
		"@@ -1,5 +1,7 @@\n package x\n+\n import \"fmt\"\n-func  f( ) {\n-fmt.Println( 1 )\n+\n+func f() {\n+\tfmt.Println(1)\n }\n"
	if v["formatted"] != false || v["diff"] != want || v["removed"] != 2.0 || v["added"] != 4.0 {
		t.Fatalf("got %v\n%s\nwant\n%s", v, v["diff"], want)
	}
	if got := applyDiff(t, ugly, v["diff"].(string)); got != mustFormat(t, ugly) {
		t.Fatalf("the diff does not give gofmt's output:\n%s", got)
	}
}

func mustFormat(t *testing.T, src string) string {
	t.Helper()
	out, err := formatSource([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// applyDiff applies a unified diff (as `patch` would) to a.
func applyDiff(t *testing.T, a, diff string) string {
	t.Helper()
	old := splitLines(a)
	var out []string
	pos := 0
	var lastKind byte
	lines := splitLines(diff)[2:]
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "@@") {
			// "@@ -start[,len] +start[,len] @@": only the old range matters.
			as, al := 0, 1
			oldRange := strings.Fields(l)[1][1:]
			if n, _ := fmt.Sscanf(oldRange, "%d,%d", &as, &al); n == 0 {
				t.Fatalf("bad hunk header %q", l)
			}
			start := as - 1
			if al == 0 {
				start = as
			}
			out = append(out, old[pos:start]...)
			pos = start
			continue
		}
		if strings.HasPrefix(l, "\\") {
			// "\ No newline at end of file" is about the line before it.
			if last := len(out) - 1; last >= 0 && lastKind != '-' {
				out[last] = strings.TrimSuffix(out[last], "\n")
			}
			continue
		}
		lastKind = l[0]
		switch l[0] {
		case ' ':
			out = append(out, l[1:])
			pos++
		case '-':
			pos++
		case '+':
			out = append(out, l[1:])
		}
	}
	out = append(out, old[pos:]...)
	return strings.Join(out, "")
}

func TestRender(t *testing.T) {
	blocks, ok, err := kit.Render("go_format", []byte(`{"path":"a.go"}`),
		[]byte(`{"path":"a.go","formatted":false,"removed":1,"added":1,"diff":"--- a/a.go\n","truncated":true}`))
	if !ok || err != nil || len(blocks) != 1 {
		t.Fatal(ok, err)
	}
	text := string(blocks[0].(kit.Text))
	if !strings.Contains(text, "not gofmt-clean: -1 +1") || !strings.Contains(text, "```diff") || !strings.Contains(text, "cut at 64 KiB") {
		t.Fatal(text)
	}
	raw, _ := kit.Execute("go_outline", []byte(`{"path":"testdata/sample.go"}`))
	blocks, ok, _ = kit.Render("go_outline", []byte(`{"path":"testdata/sample.go"}`), raw)
	text = string(blocks[0].(kit.Text))
	if !ok || !strings.Contains(text, "testdata/sample.go: package shapes, 48 lines") ||
		!strings.Contains(text, "37-37  func (c *Circle) Area() float64  // Area of the circle.") {
		t.Fatal(text)
	}
}

// The edit script is a shortest one (checked against an LCS table) and
// reconstructs b, for random inputs over a small alphabet.
func TestEditScriptIsShortestAndCorrect(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 2000; iter++ {
		a, b := randomLines(rng), randomLines(rng)
		ops := editScript(a, b)
		var ra, rb []string
		edits := 0
		for _, o := range ops {
			switch o.kind {
			case ' ':
				if a[o.a] != b[o.b] {
					t.Fatalf("kept lines differ: %q %q", a[o.a], b[o.b])
				}
				ra, rb = append(ra, a[o.a]), append(rb, b[o.b])
			case '-':
				ra = append(ra, a[o.a])
				edits++
			case '+':
				rb = append(rb, b[o.b])
				edits++
			}
		}
		if strings.Join(ra, "") != strings.Join(a, "") || strings.Join(rb, "") != strings.Join(b, "") {
			t.Fatalf("script does not cover a and b: %q %q", a, b)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("%d edits, shortest is %d: %q %q", edits, want, a, b)
		}
		if iter%50 == 0 {
			d := unifiedDiff("a", "b", a, b, rng.Intn(4))
			if got := applyDiff(t, strings.Join(a, ""), d.text); got != strings.Join(b, "") {
				t.Fatalf("diff does not apply:\n%s\n%q\n%q", d.text, got, strings.Join(b, ""))
			}
		}
	}
}

func TestEditScriptPastTheBoundStillReconstructs(t *testing.T) {
	var a, b []string
	for i := 0; i < maxEdits+10; i++ {
		a = append(a, fmt.Sprintf("a%d\n", i))
		b = append(b, fmt.Sprintf("b%d\n", i))
	}
	a = append([]string{"same\n"}, a...)
	b = append([]string{"same\n"}, b...)
	d := unifiedDiff("a", "b", a, b, 3)
	if d.removed != maxEdits+10 || d.added != maxEdits+10 {
		t.Fatal(d.removed, d.added)
	}
	if got := applyDiff(t, strings.Join(a, ""), d.text); got != strings.Join(b, "") {
		t.Fatal("does not apply")
	}
}

func randomLines(rng *rand.Rand) []string {
	n := rng.Intn(12)
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a'+rng.Intn(4))) + "\n"
	}
	if n > 0 && rng.Intn(5) == 0 {
		out[n-1] = strings.TrimSuffix(out[n-1], "\n")
	}
	return out
}

func lcs(a, b []string) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}

func TestOutlineStopsAtTheLimit(t *testing.T) {
	v, f := call(t, "go_outline", map[string]any{"path": "testdata/sample.go", "limit": 2})
	if f != nil {
		t.Fatal(f)
	}
	if len(v["decls"].([]any)) != 2 || v["decls_total"] != 12.0 || v["truncated"] != true {
		t.Fatalf("%v %v %v", len(v["decls"].([]any)), v["decls_total"], v["truncated"])
	}
	raw, _ := json.Marshal(v)
	blocks, _, _ := kit.Render("go_outline", []byte(`{"path":"testdata/sample.go","limit":2}`), raw)
	if text := string(blocks[0].(kit.Text)); !strings.Contains(text, "… 10 more declarations (limit 2)") {
		t.Fatal(text)
	}
	all, _ := call(t, "go_outline", map[string]any{"path": "testdata/sample.go"})
	if all["truncated"] != false || all["decls_total"] != 12.0 {
		t.Fatalf("%v %v", all["truncated"], all["decls_total"])
	}
}
