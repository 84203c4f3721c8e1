package main

import (
	"reflect"
	"testing"

	"toolhost.local/guest/kit"
)

const text = "héllo € 😀"

// What render builds (its lowering into the component model is what
// tests/languages.rs checks).
func TestBlocksRendersEveryKind(t *testing.T) {
	args := []byte(`{"text":"` + text + `","blob_bytes":4}`)
	value, f := kit.Execute("blocks", args)
	if f != nil {
		t.Fatal(f)
	}
	if string(value) != `{"text":"`+text+`","blob_bytes":4}` {
		t.Fatalf("value %s", value)
	}
	blocks, ok, err := kit.Render("blocks", args, value)
	if !ok || err != nil {
		t.Fatalf("render: %v %v", ok, err)
	}
	want := []kit.Content{
		kit.Text(text),
		kit.Image{Data: "iVBORw0KGgo=", MimeType: "image/png"},
		kit.Audio{Data: "UklGRgQAAABXQVZF", MimeType: "audio/wav"},
		kit.Resource{URI: "file:///workspace/notes/café.md", MimeType: "text/markdown; charset=utf-8", Contents: kit.ResourceText("# Notes ✓\n\n" + text)},
		kit.Resource{URI: "blob://pattern", MimeType: "application/octet-stream", Contents: kit.ResourceBlob("ByZFZA==")}, // 7, 38, 69, 100
		kit.Resource{URI: "memo://empty", Contents: kit.ResourceText("")},
		kit.Resource{URI: "blob://tiny", Contents: kit.ResourceBlob("AP8Q")},
		kit.ResourceLink{URI: "https://example.com/ü/doc.md", Name: "doc ✓", MimeType: "text/markdown", Description: "A linked document — é€😀"},
		kit.ResourceLink{URI: "file:///workspace/README", Name: "README"},
	}
	if !reflect.DeepEqual(blocks, want) {
		t.Fatalf("blocks\n%#v\nwant\n%#v", blocks, want)
	}
}

func TestPlainIsLeftToTheHost(t *testing.T) {
	args := []byte(`{"text":"` + text + `"}`)
	value, f := kit.Execute("plain", args)
	if f != nil {
		t.Fatal(f)
	}
	if string(value) != `{"text":"`+text+`","bytes":15}` {
		t.Fatalf("value %s", value)
	}
	if _, ok, _ := kit.Render("plain", args, value); ok {
		t.Fatal("plain rendered itself")
	}
	d := kit.ListTools()
	if len(d) != 2 || d[0].HostRenders || !d[1].HostRenders {
		t.Fatalf("descriptors %+v", d)
	}
}
