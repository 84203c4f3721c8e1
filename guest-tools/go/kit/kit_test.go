package kit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type echoArgs struct {
	Text string `json:"text"`
}

type echoValue struct {
	Text  string `json:"text"`
	Bytes int    `json:"bytes"`
}

const objectSchema = `{"type":"object"}`

func echoTool(run func(echoArgs) (echoValue, error), render func(echoArgs, echoValue) []Content) Tool {
	return Define(Descriptor{
		Name: "echo", Description: "Echoes.", InputSchema: objectSchema, OutputSchema: objectSchema,
		Paths: []PathParam{{Pointer: "/text", Access: Read}},
	}, run, render)
}

func serve(t *testing.T, tools ...Tool) {
	t.Helper()
	saved := toolset
	t.Cleanup(func() { toolset = saved })
	Serve(tools...)
}

func echo(a echoArgs) (echoValue, error) { return echoValue{Text: a.Text, Bytes: len(a.Text)}, nil }

func TestExecuteEncodesTheValue(t *testing.T) {
	serve(t, echoTool(echo, nil))
	v, f := Execute("echo", []byte(`{"text":"héllo"}`))
	if f != nil {
		t.Fatalf("failure %v", f)
	}
	if string(v) != `{"text":"héllo","bytes":6}` {
		t.Fatalf("value %s", v)
	}
}

func TestUnknownToolAndBadArguments(t *testing.T) {
	serve(t, echoTool(echo, nil))
	if _, f := Execute("nope", []byte(`{}`)); f == nil || f.Code != "unknown_tool" || !strings.Contains(f.Message, "echo") {
		t.Fatalf("unknown tool: %v", f)
	}
	for _, args := range []string{`{"text":1}`, `{"text":"a","other":true}`, `[]`, `{"text":"a"} {}`, `not json`} {
		if _, f := Execute("echo", []byte(args)); f == nil || f.Code != "invalid_arguments" {
			t.Fatalf("%s: %v", args, f)
		}
	}
}

func TestFailuresKeepTheirCodeAndInfo(t *testing.T) {
	serve(t, echoTool(func(echoArgs) (echoValue, error) {
		return echoValue{}, Fail("ambiguous_match", "%d matches", 2).WithInfo(map[string]int{"matches": 2})
	}, nil))
	_, f := Execute("echo", []byte(`{"text":"a"}`))
	if f == nil || f.Code != "ambiguous_match" || f.Message != "2 matches" {
		t.Fatalf("%v", f)
	}
	if info, ok := f.InfoJSON(); !ok || info != `{"matches":2}` {
		t.Fatalf("info %q %v", info, ok)
	}
}

func TestOtherErrorsAndPanicsAreInternal(t *testing.T) {
	cases := map[string]func(echoArgs) (echoValue, error){
		"plain error": func(echoArgs) (echoValue, error) { return echoValue{}, errors.New("boom") },
		"panic":       func(echoArgs) (echoValue, error) { panic("kaboom") },
		"bad code":    func(echoArgs) (echoValue, error) { return echoValue{}, Fail("Not-Snake", "x") },
		"nil map":     func(echoArgs) (echoValue, error) { var m map[string]int; m["x"] = 1; return echoValue{}, nil },
	}
	for name, run := range cases {
		serve(t, echoTool(run, nil))
		_, f := Execute("echo", []byte(`{"text":"a"}`))
		if f == nil || f.Code != "internal_error" {
			t.Fatalf("%s: %v", name, f)
		}
	}
	serve(t, echoTool(func(echoArgs) (echoValue, error) { panic("kaboom") }, nil))
	_, f := Execute("echo", []byte(`{"text":"a"}`))
	if !strings.Contains(f.Message, "kaboom") {
		t.Fatalf("the panic's message is kept: %v", f)
	}
	if info, ok := f.InfoJSON(); !ok || !strings.Contains(info, "stack") {
		t.Fatalf("the stack is in info: %q", info)
	}
}

func TestAValueThatDoesNotEncodeIsInternal(t *testing.T) {
	tool := Define(Descriptor{Name: "bad", Description: "d", InputSchema: objectSchema, OutputSchema: objectSchema},
		func(struct{}) (any, error) { return map[string]any{"f": func() {}}, nil }, nil)
	serve(t, tool)
	if _, f := Execute("bad", []byte(`{}`)); f == nil || f.Code != "internal_error" {
		t.Fatalf("%v", f)
	}
}

func TestRender(t *testing.T) {
	serve(t, echoTool(echo, func(a echoArgs, v echoValue) []Content {
		return []Content{Text(a.Text + "!"), ResourceLink{URI: "file:///x", Name: "x"}}
	}))
	blocks, ok, err := Render("echo", []byte(`{"text":"hi"}`), []byte(`{"text":"hi","bytes":2}`))
	if !ok || err != nil || len(blocks) != 2 || blocks[0] != Text("hi!") {
		t.Fatalf("%v %v %v", blocks, ok, err)
	}
	// No renderer, an unknown tool, a value that does not decode and a
	// panic all leave rendering to the host.
	serve(t, echoTool(echo, nil))
	if _, ok, _ := Render("echo", []byte(`{}`), []byte(`{}`)); ok {
		t.Fatal("no renderer")
	}
	if _, ok, _ := Render("nope", []byte(`{}`), []byte(`{}`)); ok {
		t.Fatal("unknown tool")
	}
	serve(t, echoTool(echo, func(echoArgs, echoValue) []Content { panic("render boom") }))
	if _, ok, err := Render("echo", []byte(`{"text":"a"}`), []byte(`{"text":"a","bytes":1}`)); ok || err == nil || !strings.Contains(err.Error(), "render boom") {
		t.Fatalf("panic: %v %v", ok, err)
	}
	if _, ok, err := Render("echo", []byte(`{"text":"a"}`), []byte(`[1]`)); ok || err == nil {
		t.Fatalf("bad value: %v %v", ok, err)
	}
}

func TestRenderEveryKindOfBlock(t *testing.T) {
	all := []Content{
		Audio{Data: "UklGRg==", MimeType: "audio/wav"},
		Resource{URI: "file:///notes.md", MimeType: "text/markdown", Contents: ResourceText("# Notes")},
		Resource{URI: "file:///a.bin", Contents: ResourceBlob("AP8=")},
		ResourceLink{URI: "file:///b.txt", Name: "b.txt", Description: "the other file"},
		Image{Data: "iVBORw==", MimeType: "image/png"},
		Text("done"),
	}
	serve(t, echoTool(echo, func(echoArgs, echoValue) []Content { return all }))
	blocks, ok, err := Render("echo", []byte(`{"text":"a"}`), []byte(`{"text":"a","bytes":1}`))
	if !ok || err != nil || !reflect.DeepEqual(blocks, all) {
		t.Fatalf("%+v %v %v", blocks, ok, err)
	}
	// What the contract cannot carry leaves rendering to the host.
	for name, bad := range map[string][]Content{
		"nil block":            {Text("a"), nil},
		"resource, no content": {Resource{URI: "file:///x"}},
	} {
		serve(t, echoTool(echo, func(echoArgs, echoValue) []Content { return bad }))
		if _, ok, err := Render("echo", []byte(`{"text":"a"}`), []byte(`{"text":"a","bytes":1}`)); ok || err == nil {
			t.Errorf("%s: %v %v", name, ok, err)
		}
	}
}

func TestHostRenders(t *testing.T) {
	plain := echoTool(echo, nil)
	plain.HostRenders = true
	if err := Check([]Tool{plain}); err != nil {
		t.Fatal(err)
	}
	serve(t, plain)
	if blocks, ok, err := Render("echo", []byte(`{"text":"a"}`), []byte(`{"text":"a","bytes":1}`)); ok || err != nil || blocks != nil {
		t.Fatalf("%v %v %v", blocks, ok, err)
	}
	if got := ListTools(); !got[0].HostRenders {
		t.Fatalf("%+v", got)
	}
	// A renderer the host would never call is a mistake.
	both := echoTool(echo, func(echoArgs, echoValue) []Content { return []Content{Text("never")} })
	both.HostRenders = true
	if err := Check([]Tool{both}); err == nil || !strings.Contains(err.Error(), "HostRenders") {
		t.Fatalf("%v", err)
	}
}

func TestCheckRefusesBadToolsets(t *testing.T) {
	good := echoTool(echo, nil)
	rename := func(name string) Tool { t := good; t.Name = name; return t }
	withSchema := func(s string) Tool { t := good; t.OutputSchema = s; return t }
	withPath := func(p string) Tool { t := good; t.Paths = []PathParam{{Pointer: p}}; return t }
	bad := map[string][]Tool{
		"no tools":          nil,
		"capital":           {rename("Echo")},
		"dash":              {rename("echo-1")},
		"too long":          {rename(strings.Repeat("a", 65))},
		"twice":             {good, good},
		"schema not json":   {withSchema(`{"type":`)},
		"schema not object": {withSchema(`[]`)},
		"pointer":           {withPath("path")},
		"no body":           {{Descriptor: good.Descriptor}},
	}
	for name, tools := range bad {
		if err := Check(tools); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := Check([]Tool{good, rename("echo_2")}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Serve panics on a bad toolset")
		}
	}()
	Serve(rename("Bad"))
}

func TestFailPathCodes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errMissing := os.Open(filepath.Join(dir, "missing"))
	_, errNotDir := os.Open(filepath.Join(file, "below"))
	_, errDir := os.ReadFile(dir)
	cases := map[string]error{
		"not_found":       errMissing,
		"not_a_directory": errNotDir,
		"is_directory":    errDir,
		"io_error":        errors.New("disk on fire"),
		"quota":           Fail("quota", "kept"),
	}
	for want, err := range cases {
		if got := FailPath(err, "p").Code; got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

func TestListToolsKeepsTheOrder(t *testing.T) {
	a, b := echoTool(echo, nil), echoTool(echo, nil)
	a.Name, b.Name = "zeta", "alpha"
	serve(t, a, b)
	got := ListTools()
	if len(got) != 2 || got[0].Name != "zeta" || got[1].Name != "alpha" {
		t.Fatalf("%+v", got)
	}
	if _, err := json.Marshal(got); err != nil {
		t.Fatal(err)
	}
}

func TestSnakeCase(t *testing.T) {
	for s, want := range map[string]bool{
		"a": true, "read_file": true, "x9_": true, "": false, "A": false, "9a": false,
		"_a": false, "a-b": false, "aé": false, "a b": false,
	} {
		if got := snakeCase(s); got != want {
			t.Errorf("%q: %v", s, got)
		}
	}
}
