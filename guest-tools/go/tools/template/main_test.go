package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// A file of 2.5 MiB in lines of 1 KiB: count_lines reports after 1 and 2
// MiB (of the file's size), and stops after the first when cancelled.
func TestCountLinesReportsProgressAndStopsWhenCancelled(t *testing.T) {
	line := strings.Repeat("x", 1023) + "\n"
	path := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 2560)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"path":"` + path + `"}`)
	kit.TakeReports()
	if _, f := kit.Execute("count_lines", args); f != nil {
		t.Fatal(f)
	}
	want := []kit.Report{
		kit.ProgressReport{Done: 1 << 20, Total: 2560 << 10, Message: "bytes read"},
		kit.ProgressReport{Done: 2 << 20, Total: 2560 << 10, Message: "bytes read"},
	}
	if got := kit.TakeReports(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}

	kit.CancelForTest(true)
	defer kit.CancelForTest(false)
	_, f := kit.Execute("count_lines", args)
	if f == nil || f.Code != "cancelled" || !strings.Contains(f.Message, "after 1048576 bytes") {
		t.Fatalf("cancelled: %v", f)
	}
	if got := kit.TakeReports(); len(got) != 0 {
		t.Fatalf("reports after cancelling: %+v", got)
	}
	// A small file is counted whole: nothing is checked before a mebibyte.
	small := filepath.Join(t.TempDir(), "small.txt")
	if err := os.WriteFile(small, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, f := kit.Execute("count_lines", []byte(`{"path":"`+small+`"}`)); f != nil {
		t.Fatal(f)
	}
}
