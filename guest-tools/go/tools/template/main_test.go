package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"toolhost.local/guest/kit"
)

func TestCountLines(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"a.txt": "one\ntwo\n", "b.txt": "one\ntwo", "empty.txt": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]Value{
		"a.txt":     {Lines: 2, Bytes: 8},
		"b.txt":     {Lines: 2, Bytes: 7},
		"empty.txt": {Lines: 0, Bytes: 0},
	} {
		path := filepath.Join(dir, name)
		raw, f := kit.Execute("count_lines", []byte(`{"path":"`+path+`"}`))
		if f != nil {
			t.Fatal(f)
		}
		var got Value
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		want.Path = path
		if got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if _, f := kit.Execute("count_lines", []byte(`{"path":"`+filepath.Join(dir, "nope")+`"}`)); f == nil || f.Code != "not_found" {
		t.Fatalf("%v", f)
	}
	if err := kit.Check([]kit.Tool{CountLines}); err != nil {
		t.Fatal(err)
	}
}
