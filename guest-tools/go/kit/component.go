//go:build wasip1

// The WIT plumbing of a Go tool component, written by hand (there is no
// wit-bindgen for Go's own wasip1 port): the canonical ABI of the three
// exports of `toolhost:tool/tool@0.3.0`, their post-return functions,
// `cabi_realloc`, the three functions of the `toolhost:tool/context@0.3.0`
// import (behind Progress, Log and Cancelled), and the
// `wasi:cli/environment.initial-cwd` import. The flat signatures and the
// layouts below are the ones wit-bindgen-c 0.61.1 generates for the same
// contract (the C kit's bindings, whose list elements are C structs laid
// out as the canonical ABI says).
//
// Memory: Go's collector does not move objects, so memory handed to the
// host only has to stay reachable. What the host allocates (through
// cabi_realloc) for a call's arguments is held in `incoming` until the
// call has copied it; what a call returns is held in `outgoing` until the
// host calls the post-return function. The layouts (sizes, alignments,
// offsets) are the canonical ABI's for wasm32, written out below.
//
// The collector: cabi_realloc must not call an import (the component model
// forbids leaving the instance while the host lowers arguments into it, and
// wasmtime traps with "cannot leave component instance"), and a collection
// that starts inside an allocation reads the clock, an import. So the
// collector is off between calls and on only while an export runs (see
// collecting); each call runs in a fresh instance anyway.

package kit

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// gcPercent is GOGC while an export runs.
const gcPercent = 100

func init() {
	runtime.MemProfileRate = 0 // no sampling (and no stack walks) in cabi_realloc
	debug.SetGCPercent(-1)
	backend = witContext{}
}

// collecting runs f with the collector on.
func collecting(f func()) {
	debug.SetGCPercent(gcPercent)
	defer debug.SetGCPercent(-1)
	f()
}

var notCapable error = syscall.ENOTCAPABLE

// incoming: the host's allocations for the arguments of the current call.
var incoming [][]uint64

// outgoing: what the last call returned, until its post-return.
var outgoing [][]uint64

// empty is where empty strings and lists point (any aligned, in-bounds
// address will do).
var empty uint64

func alloc(keep *[][]uint64, size uint32) []byte {
	if size == 0 {
		return nil
	}
	words := make([]uint64, (size+7)/8) // 8-aligned: every alignment the ABI asks for
	*keep = append(*keep, words)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
}

func addr(b []byte) uint32 {
	if len(b) == 0 {
		return uint32(uintptr(unsafe.Pointer(&empty)))
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

//go:wasmexport cabi_realloc
func cabiRealloc(old unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if align > 8 {
		panic(fmt.Sprintf("cabi_realloc: alignment %d is not supported", align))
	}
	b := alloc(&incoming, newSize)
	if old != nil && oldSize > 0 {
		copy(b, unsafe.Slice((*byte)(old), min(oldSize, newSize)))
	}
	if len(b) == 0 {
		return unsafe.Pointer(&empty)
	}
	return unsafe.Pointer(&b[0])
}

// lift copies a string the host passed in.
func lift(ptr unsafe.Pointer, n uint32) []byte {
	if n == 0 {
		return []byte{}
	}
	return append([]byte(nil), unsafe.Slice((*byte)(ptr), n)...)
}

// writer lays out one return area and everything it points to.
type writer struct{}

// str writes a string (pointer, length) at b[off:]; invalid UTF-8 becomes
// U+FFFD (the host refuses strings that are not UTF-8).
func (writer) str(b []byte, off int, s string) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	data := alloc(&outgoing, uint32(len(s)))
	copy(data, s)
	binary.LittleEndian.PutUint32(b[off:], addr(data))
	binary.LittleEndian.PutUint32(b[off+4:], uint32(len(s)))
}

// optStr writes option<string> (12 bytes: case, then the string at +4).
func (w writer) optStr(b []byte, off int, s string, some bool) {
	if !some {
		b[off] = 0
		return
	}
	b[off] = 1
	w.str(b, off+4, s)
}

// list allocates n elements of size bytes, writes (pointer, n) at b[off:]
// and returns the elements' memory.
func (writer) list(b []byte, off int, n, size int) []byte {
	elems := alloc(&outgoing, uint32(n*size))
	binary.LittleEndian.PutUint32(b[off:], addr(elems))
	binary.LittleEndian.PutUint32(b[off+4:], uint32(n))
	return elems
}

// media writes an image or audio block (case tag) at b: data at 4,
// mime-type at 12.
func (w writer) media(b []byte, tag byte, data, mimeType string) {
	b[0] = tag
	w.str(b, 4, data)
	w.str(b, 12, mimeType)
}

func ret(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// descriptorSize is the size of a tool-descriptor (align 4): name 0,
// description 8, input-schema 16, output-schema 24, annotations 32 (four
// bools), paths 36, title 44 (option<string>), urls 56, host-renders 64
// (bool), then padding to the alignment. path-param: size 12: pointer 0,
// access 8.
const descriptorSize = 68

//go:wasmexport toolhost:tool/tool@0.3.0#list-tools
func exportListTools() unsafe.Pointer {
	var w writer
	area := alloc(&outgoing, 8)
	tools := ListTools()
	elems := w.list(area, 0, len(tools), descriptorSize)
	for i, d := range tools {
		e := elems[i*descriptorSize : (i+1)*descriptorSize]
		w.str(e, 0, d.Name)
		w.str(e, 8, d.Description)
		w.str(e, 16, d.InputSchema)
		w.str(e, 24, d.OutputSchema)
		for j, flag := range []bool{d.Annotations.ReadOnly, d.Annotations.Destructive, d.Annotations.Idempotent, d.Annotations.OpenWorld} {
			if flag {
				e[32+j] = 1
			}
		}
		paths := w.list(e, 36, len(d.Paths), 12)
		for k, p := range d.Paths {
			w.str(paths[k*12:], 0, p.Pointer)
			paths[k*12+8] = byte(p.Access)
		}
		w.optStr(e, 44, d.Title, d.Title != "")
		urls := w.list(e, 56, len(d.URLs), 8)
		for k, u := range d.URLs {
			w.str(urls, k*8, u)
		}
		if d.HostRenders {
			e[64] = 1
		}
	}
	return ret(area)
}

//go:wasmexport cabi_post_toolhost:tool/tool@0.3.0#list-tools
func postListTools(unsafe.Pointer) { outgoing = nil }

var enterCwd sync.Once

// result<string, tool-failure>: size 32: case 0, payload 4; ok: the
// string; error: code 4, message 12, info 20 (option<string>).
//
//go:wasmexport toolhost:tool/tool@0.3.0#execute
func exportExecute(namePtr unsafe.Pointer, nameLen uint32, argsPtr unsafe.Pointer, argsLen uint32) unsafe.Pointer {
	name, args := string(lift(namePtr, nameLen)), lift(argsPtr, argsLen)
	incoming = nil
	var value []byte
	var failure *Failure
	enterCwd.Do(enterInitialCwd) // its result is lowered through cabi_realloc: collector off
	collecting(func() { value, failure = Execute(name, args) })
	var w writer
	area := alloc(&outgoing, 32)
	if failure == nil {
		w.str(area, 4, string(value))
		return ret(area)
	}
	area[0] = 1
	w.str(area, 4, failure.Code)
	info, some := failure.InfoJSON()
	w.str(area, 12, failure.Message)
	w.optStr(area, 20, info, some)
	return ret(area)
}

//go:wasmexport cabi_post_toolhost:tool/tool@0.3.0#execute
func postExecute(unsafe.Pointer) { outgoing = nil }

// option<list<content-block>>: size 12: case 0, list 4. content-block:
// size 44 (align 4): case 0 (in declaration order: text, image,
// resource-link, audio, embedded-resource), payload 4 (the largest,
// resource-link, is 40 bytes); text: string; image and audio: data 4,
// mime-type 12; resource-link: uri 4, name 12, mime-type 20 and
// description 32 (option<string> each); embedded-resource: uri 4,
// mime-type 12 (option<string>), contents 24 (resource-contents: case 24,
// text or blob: the string at 28).
//
//go:wasmexport toolhost:tool/tool@0.3.0#render
func exportRender(namePtr unsafe.Pointer, nameLen uint32, argsPtr unsafe.Pointer, argsLen uint32, valuePtr unsafe.Pointer, valueLen uint32) unsafe.Pointer {
	name := string(lift(namePtr, nameLen))
	args, value := lift(argsPtr, argsLen), lift(valuePtr, valueLen)
	incoming = nil
	var blocks []Content
	var ok bool
	var err error
	collecting(func() { blocks, ok, err = Render(name, args, value) })
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolhost kit: %v (the host renders instead)\n", err)
	}
	var w writer
	area := alloc(&outgoing, 12)
	if !ok {
		return ret(area)
	}
	area[0] = 1
	elems := w.list(area, 4, len(blocks), 44)
	for i, block := range blocks {
		e := elems[i*44 : (i+1)*44]
		switch c := block.(type) {
		case Text:
			e[0] = 0
			w.str(e, 4, string(c))
		case Image:
			w.media(e, 1, c.Data, c.MimeType)
		case ResourceLink:
			e[0] = 2
			w.str(e, 4, c.URI)
			w.str(e, 12, c.Name)
			w.optStr(e, 20, c.MimeType, c.MimeType != "")
			w.optStr(e, 32, c.Description, c.Description != "")
		case Audio:
			w.media(e, 3, c.Data, c.MimeType)
		case Resource:
			e[0] = 4
			w.str(e, 4, c.URI)
			w.optStr(e, 12, c.MimeType, c.MimeType != "")
			switch r := c.Contents.(type) {
			case ResourceText: // case 0: e[24] is zero already
				w.str(e, 28, string(r))
			case ResourceBlob:
				e[24] = 1
				w.str(e, 28, string(r))
			default:
				// Render refused a resource without contents.
				panic(fmt.Sprintf("unknown resource contents %T", c.Contents))
			}
		default:
			// Content is sealed: only this package's types implement it.
			panic(fmt.Sprintf("unknown content block %T", block))
		}
	}
	return ret(area)
}

//go:wasmexport cabi_post_toolhost:tool/tool@0.3.0#render
func postRender(unsafe.Pointer) { outgoing = nil }

// initial-cwd: func() -> option<string>, lowered with a return area of 12
// bytes (case 0, string 4) that the host fills, allocating the string
// with cabi_realloc.
//
//go:wasmimport wasi:cli/environment@0.2.12 initial-cwd
func wasiInitialCwd(ret unsafe.Pointer)

// enterInitialCwd changes into the host's initial working directory (the
// first granted directory), so relative paths resolve as the host's path
// checks resolved them. Go's wasip1 port keeps the working directory
// itself and resolves relative paths against the preopens.
func enterInitialCwd() {
	var area [3]uint32
	wasiInitialCwd(unsafe.Pointer(&area[0]))
	if area[0]&0xff == 0 {
		return
	}
	// The string is in memory this module gave the host (cabi_realloc).
	cwd := string(lift(unsafe.Add(unsafe.Pointer(nil), area[1]), area[2]))
	incoming = nil
	if err := os.Chdir(cwd); err != nil {
		fmt.Fprintf(os.Stderr, "toolhost kit: cannot enter the initial working directory %q: %v\n", cwd, err)
	}
}

// The context import. progress: (done: u64, total: option<u64>, message:
// option<string>), flattened to (i64; i32 case, i64; i32 case, i32 pointer,
// i32 length). log: (level: log-level, message: string), flattened to (i32;
// i32 pointer, i32 length). cancelled: () -> bool, an i32. The strings are
// the caller's memory, read by the host during the call (nothing is
// allocated through cabi_realloc).
//
//go:wasmimport toolhost:tool/context@0.3.0 progress
func contextProgress(done uint64, hasTotal uint32, total uint64, hasMessage uint32, message unsafe.Pointer, messageLen uint32)

//go:wasmimport toolhost:tool/context@0.3.0 log
func contextLog(level uint32, message unsafe.Pointer, messageLen uint32)

//go:wasmimport toolhost:tool/context@0.3.0 cancelled
func contextCancelled() uint32

// witContext is the backend of Progress, Log and Cancelled in a component.
type witContext struct{}

// strPtr is where s's bytes are (any valid address when s is empty).
func strPtr(s string) unsafe.Pointer {
	if s == "" {
		return unsafe.Pointer(&empty)
	}
	return unsafe.Pointer(unsafe.StringData(s))
}

func (witContext) progress(done, total uint64, message string) {
	var hasTotal, hasMessage uint32
	if total != TotalUnknown {
		hasTotal = 1
	} else {
		total = 0
	}
	if message != "" {
		hasMessage = 1
	}
	contextProgress(done, hasTotal, total, hasMessage, strPtr(message), uint32(len(message)))
	runtime.KeepAlive(message)
}

func (witContext) log(level LogLevel, message string) {
	contextLog(uint32(level), strPtr(message), uint32(len(message)))
	runtime.KeepAlive(message)
}

func (witContext) cancelled() bool { return contextCancelled() != 0 }
