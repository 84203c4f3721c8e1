// A test fixture, not a tool to copy: the blocks component, which
// tests/languages.rs builds and runs through the host to check the kit's
// hand-written lowering of contract 0.3.0 (kit/component.go) end to end.
// The C kit has the same fixture (guest-tools/c/tools/blocks/), and the
// test expects the same content from both.
//
// blocks {text, blob_bytes} -> {text, blob_bytes} renders one block of
// every kind, in this order: text (`text`); an image (a PNG signature);
// audio (a WAV header); an embedded resource with text and a MIME type;
// one with a blob of blob_bytes pattern bytes (byte i is i*31 + 7, mod 256)
// and a MIME type; one with empty text and none; one with a small blob and
// none; a resource link with its optional fields set; one without them.
// Strings are non-ASCII where they can be.
//
// plain {text} -> {text, bytes} declares HostRenders and has no renderer:
// the host renders it.
package main

import (
	"encoding/base64"

	"toolhost.local/guest/kit"
)

// BlocksArgs are the arguments of blocks, and its value.
type BlocksArgs struct {
	Text      string `json:"text"`
	BlobBytes int    `json:"blob_bytes"`
}

// PlainArgs are the arguments of plain.
type PlainArgs struct {
	Text string `json:"text"`
}

// PlainValue is the value of plain: its text and the text's length in
// bytes.
type PlainValue struct {
	Text  string `json:"text"`
	Bytes int    `json:"bytes"`
}

// Blocks renders every kind of block.
var Blocks = kit.Define(kit.Descriptor{
	Name:        "blocks",
	Title:       "Every block ✓",
	Description: "Renders one content block of every kind (a test fixture): é€😀.",
	InputSchema: `{"type":"object","properties":{"text":{"type":"string"},` +
		`"blob_bytes":{"type":"integer","minimum":0,"maximum":1000000}},` +
		`"required":["text","blob_bytes"],"additionalProperties":false}`,
	OutputSchema: `{"type":"object","properties":{"text":{"type":"string"},` +
		`"blob_bytes":{"type":"integer","minimum":0}},` +
		`"required":["text","blob_bytes"],"additionalProperties":false}`,
	Annotations: kit.Annotations{ReadOnly: true, Idempotent: true},
}, func(a BlocksArgs) (BlocksArgs, error) {
	if a.BlobBytes < 0 || a.BlobBytes > 1000000 {
		return BlocksArgs{}, kit.Fail("invalid_arguments", "blob_bytes must be an integer from 0 to 1000000")
	}
	return a, nil
}, renderBlocks)

// Plain is left to the host to render.
var Plain = kit.Define(kit.Descriptor{
	Name:        "plain",
	Description: "Echoes its text with its length in bytes; the host renders it (a test fixture).",
	InputSchema: `{"type":"object","properties":{"text":{"type":"string"}},` +
		`"required":["text"],"additionalProperties":false}`,
	OutputSchema: `{"type":"object","properties":{"text":{"type":"string"},` +
		`"bytes":{"type":"integer","minimum":0}},"required":["text","bytes"],"additionalProperties":false}`,
	Annotations: kit.Annotations{Destructive: true, OpenWorld: true}, // the other two hints than blocks'
	HostRenders: true,
}, func(a PlainArgs) (PlainValue, error) {
	return PlainValue{Text: a.Text, Bytes: len(a.Text)}, nil
}, nil)

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

func renderBlocks(_ BlocksArgs, v BlocksArgs) []kit.Content {
	blob := make([]byte, v.BlobBytes)
	for i := range blob {
		blob[i] = byte(i*31 + 7)
	}
	return []kit.Content{
		kit.Text(v.Text),
		kit.Image{Data: b64([]byte("\x89PNG\r\n\x1a\n")), MimeType: "image/png"},
		kit.Audio{Data: b64([]byte("RIFF\x04\x00\x00\x00WAVE")), MimeType: "audio/wav"},
		kit.Resource{
			URI:      "file:///workspace/notes/café.md",
			MimeType: "text/markdown; charset=utf-8",
			Contents: kit.ResourceText("# Notes ✓\n\n" + v.Text),
		},
		kit.Resource{URI: "blob://pattern", MimeType: "application/octet-stream", Contents: kit.ResourceBlob(b64(blob))},
		kit.Resource{URI: "memo://empty", Contents: kit.ResourceText("")},
		kit.Resource{URI: "blob://tiny", Contents: kit.ResourceBlob(b64([]byte{0x00, 0xff, 0x10}))},
		kit.ResourceLink{
			URI:         "https://example.com/ü/doc.md",
			Name:        "doc ✓",
			MimeType:    "text/markdown",
			Description: "A linked document — é€😀",
		},
		kit.ResourceLink{URI: "file:///workspace/README", Name: "README"},
	}
}

func init() { kit.Serve(Blocks, Plain) }

func main() {}
