// Package kit is the authoring kit of toolhost's Go tools: a tool is a
// [Tool] value (its descriptor, a typed body and an optional renderer), a
// component is the set of tools passed to [Serve] from its main package's
// init function.
//
// While it runs, a tool may report progress ([Progress]), log ([Log]) and
// ask whether its caller cancelled ([Cancelled]): the contract's `context`
// import (context.go).
//
// Everything here is plain Go and runs natively, so a tool's tests call the
// same dispatch ([Execute], [Render], [ListTools]) the component runs, and
// see what a tool reported in [TakeReports]. The WIT plumbing (the canonical
// ABI of the `toolhost:tool/tool@0.3.0` exports, and the `context` and
// `initial-cwd` imports) is in component.go, compiled only for GOOS=wasip1.
package kit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
)

// PathAccess is how a tool uses a path argument (the contract's
// `path-access`); the host checks it before the tool runs.
type PathAccess uint8

// The path-access cases, in the contract's order (their ABI values).
const (
	Read PathAccess = iota
	List
	Create
	Overwrite
	Patch
	Write
)

// PathParam declares a path argument: a JSON Pointer into the arguments.
type PathParam struct {
	Pointer string
	Access  PathAccess
}

// Annotations are the behaviour hints of a tool (as in MCP).
type Annotations struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

// Descriptor is what a component says about one of its tools.
type Descriptor struct {
	// Name matches [a-z][a-z0-9_]*, at most 64 bytes, unique.
	Name string
	// Title is a short title for people ("" for none).
	Title string
	// Description says what the tool does, for the model.
	Description string
	// InputSchema and OutputSchema are JSON Schemas (JSON objects, as text).
	InputSchema, OutputSchema string
	Annotations               Annotations
	Paths                     []PathParam
	// URLs are JSON Pointers to URL arguments (checked by the host).
	URLs []string
	// HostRenders says the tool renders nothing itself (Define's render is
	// nil): the host renders the value and never asks the component, so a
	// call needs one instance instead of two under the default policy.
	HostRenders bool
}

// Content is one block of what the model reads: [Text], [Image],
// [ResourceLink], [Audio] or [Resource].
type Content interface{ content() }

// Text is a text block.
type Text string

// Image is an image block: base64 data and its MIME type.
type Image struct{ Data, MimeType string }

// ResourceLink is a link to a resource the model can ask for separately.
type ResourceLink struct {
	URI, Name string
	// MimeType and Description are optional ("" for none).
	MimeType, Description string
}

// Audio is an audio block: base64 data and its MIME type (e.g. audio/wav).
type Audio struct{ Data, MimeType string }

// Resource is a resource's contents, embedded in the result: its URI, its
// MIME type ("" when unknown) and its contents, [ResourceText] or
// [ResourceBlob].
type Resource struct {
	URI, MimeType string
	Contents      ResourceContents
}

// ResourceContents is what an embedded [Resource] holds: [ResourceText] or
// [ResourceBlob].
type ResourceContents interface{ resourceContents() }

// ResourceText is a resource's text.
type ResourceText string

// ResourceBlob is base64 of a resource's binary content.
type ResourceBlob string

func (Text) content()         {}
func (Image) content()        {}
func (ResourceLink) content() {}
func (Audio) content()        {}
func (Resource) content()     {}

func (ResourceText) resourceContents() {}
func (ResourceBlob) resourceContents() {}

// Failure is a failure the tool reports itself: a stable snake_case code,
// a message the model can act on, and optional details (any value that
// encodes as JSON).
type Failure struct {
	Code    string
	Message string
	Info    any
}

func (f *Failure) Error() string { return f.Code + ": " + f.Message }

// Fail makes a [Failure]; the message is formatted as by fmt.Sprintf.
func Fail(code, format string, args ...any) *Failure {
	return &Failure{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithInfo returns f with details attached.
func (f *Failure) WithInfo(info any) *Failure {
	f.Info = info
	return f
}

// FailPath turns an error of the os package on path into a failure with
// the code a model can act on: not_found, is_directory, not_a_directory,
// permission_denied, name_too_long, too_many_links, or io_error.
func FailPath(err error, path string) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Fail("not_found", "%s: no such file or directory", path)
	case errors.Is(err, syscall.EISDIR):
		return Fail("is_directory", "%s is a directory", path)
	case errors.Is(err, syscall.ENOTDIR):
		return Fail("not_a_directory", "%s: a component of the path is not a directory", path)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, notCapable):
		return Fail("permission_denied", "%s: permission denied", path)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return Fail("name_too_long", "%s: name too long", path)
	case errors.Is(err, syscall.ELOOP):
		return Fail("too_many_links", "%s: too many levels of symbolic links", path)
	}
	return Fail("io_error", "%s: %v", path, err)
}

// Tool is one tool: its descriptor and the functions behind it. Make one
// with [Define].
type Tool struct {
	Descriptor
	run    func(args []byte) (any, error)
	render func(args, value []byte) ([]Content, error)
}

// Define makes a tool whose arguments decode into A and whose canonical
// value is V (encoded with encoding/json). render may be nil: the host
// then renders the value itself (declare HostRenders in d too, and the
// host never asks the component). The host has validated the arguments
// against the input schema before run sees them; the kit decodes them
// strictly (an unknown field is invalid_arguments), and V must encode
// to what the output schema says, which the host checks again.
func Define[A, V any](d Descriptor, run func(A) (V, error), render func(A, V) []Content) Tool {
	t := Tool{Descriptor: d}
	t.run = func(raw []byte) (any, error) {
		var a A
		if err := decodeStrict(raw, &a); err != nil {
			return nil, Fail("invalid_arguments", "the arguments do not decode: %v", err)
		}
		return run(a)
	}
	if render != nil {
		t.render = func(rawArgs, rawValue []byte) ([]Content, error) {
			var a A
			var v V
			if err := decodeStrict(rawArgs, &a); err != nil {
				return nil, fmt.Errorf("the arguments do not decode: %w", err)
			}
			if err := json.Unmarshal(rawValue, &v); err != nil {
				return nil, fmt.Errorf("the value does not decode: %w", err)
			}
			return render(a, v), nil
		}
	}
	return t
}

func decodeStrict(raw []byte, into any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(into); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

var toolset []Tool

// Serve sets the tools of this component (call it once, from init). It
// panics when the toolset is not valid (see [Check]): a component with a
// bad descriptor must fail its tests, not a user's call.
func Serve(tools ...Tool) {
	if err := Check(tools); err != nil {
		panic("kit.Serve: " + err.Error())
	}
	toolset = tools
}

// snakeCase reports whether s matches [a-z][a-z0-9_]* (tool names and
// failure codes). Written out rather than a regexp: package regexp's
// initialisation would run in every instance, i.e. on every call.
func snakeCase(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Check checks a toolset: names ([a-z][a-z0-9_]*, at most 64 bytes,
// unique), both schemas are JSON objects, path and URL pointers are JSON
// Pointers, and each tool has a body.
func Check(tools []Tool) error {
	if len(tools) == 0 {
		return errors.New("no tools")
	}
	seen := map[string]bool{}
	for _, t := range tools {
		if !snakeCase(t.Name) || len(t.Name) > 64 {
			return fmt.Errorf("tool name %q: must match [a-z][a-z0-9_]* (at most 64 bytes)", t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("tool %q is defined twice", t.Name)
		}
		seen[t.Name] = true
		if t.run == nil {
			return fmt.Errorf("tool %q has no body (make it with kit.Define)", t.Name)
		}
		if t.HostRenders && t.render != nil {
			return fmt.Errorf("tool %q declares HostRenders and has a renderer (the host never calls it)", t.Name)
		}
		for which, schema := range map[string]string{"input": t.InputSchema, "output": t.OutputSchema} {
			var obj map[string]any
			if err := json.Unmarshal([]byte(schema), &obj); err != nil {
				return fmt.Errorf("tool %q: the %s schema is not a JSON object: %v", t.Name, which, err)
			}
		}
		pointers := append([]string{}, t.URLs...)
		for _, p := range t.Paths {
			if p.Access > Write {
				return fmt.Errorf("tool %q: path %q has no access kind %d", t.Name, p.Pointer, p.Access)
			}
			pointers = append(pointers, p.Pointer)
		}
		for _, p := range pointers {
			if !strings.HasPrefix(p, "/") {
				return fmt.Errorf("tool %q: %q is not a JSON Pointer (it starts with /)", t.Name, p)
			}
		}
	}
	return nil
}

// ListTools returns the descriptors of the toolset, in the order given.
func ListTools() []Descriptor {
	out := make([]Descriptor, len(toolset))
	for i, t := range toolset {
		out[i] = t.Descriptor
	}
	return out
}

func find(name string) *Tool {
	for i := range toolset {
		if toolset[i].Name == name {
			return &toolset[i]
		}
	}
	return nil
}

// Execute runs tool name on arguments (a JSON object) and returns the
// canonical value as JSON, or the failure. A panic in the tool becomes
// internal_error (with the panic's message), as does any error that is not
// a *Failure.
func Execute(name string, arguments []byte) (value []byte, failure *Failure) {
	t := find(name)
	if t == nil {
		return nil, Fail("unknown_tool", "this component has no tool %q (it has: %s)", name, names())
	}
	defer func() {
		if r := recover(); r != nil {
			value = nil
			failure = Fail("internal_error", "the tool panicked: %v", r).
				WithInfo(map[string]string{"stack": clip(string(debug.Stack()), 4096)})
		}
	}()
	v, err := t.run(arguments)
	if err != nil {
		return nil, asFailure(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, Fail("internal_error", "the value does not encode as JSON: %v", err)
	}
	return out, nil
}

// Render projects a value of tool name to what the model reads. ok is
// false when the tool has no renderer, declares HostRenders, or is unknown:
// the host renders. A renderer that panics, fails or returns a nil block
// (or a [Resource] without contents) also leaves rendering to the host,
// with the reason in err (a component reports it on stderr).
func Render(name string, arguments, value []byte) (blocks []Content, ok bool, err error) {
	t := find(name)
	if t == nil || t.render == nil || t.HostRenders {
		return nil, false, nil
	}
	defer func() {
		if r := recover(); r != nil {
			blocks, ok, err = nil, false, fmt.Errorf("render of %s panicked: %v", name, r)
		}
	}()
	blocks, err = t.render(arguments, value)
	if err == nil {
		err = checkBlocks(name, blocks)
	}
	if err != nil {
		return nil, false, err
	}
	return blocks, true, nil
}

// checkBlocks refuses what the contract cannot carry: a nil block, a
// resource without contents.
func checkBlocks(name string, blocks []Content) error {
	for i, b := range blocks {
		switch c := b.(type) {
		case nil:
			return fmt.Errorf("render of %s: block %d is nil", name, i)
		case Resource:
			if c.Contents == nil {
				return fmt.Errorf("render of %s: resource %q (block %d) has no contents", name, c.URI, i)
			}
		}
	}
	return nil
}

func asFailure(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		if !snakeCase(f.Code) {
			return Fail("internal_error", "the tool failed with a code that is not snake_case (%q): %s", f.Code, f.Message)
		}
		return f
	}
	return Fail("internal_error", "%v", err)
}

func names() string {
	n := make([]string, len(toolset))
	for i, t := range toolset {
		n[i] = t.Name
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// InfoJSON encodes a failure's details, or "" when there are none (or
// they do not encode, which is reported inside the message instead).
func (f *Failure) InfoJSON() (string, bool) {
	if f.Info == nil {
		return "", false
	}
	b, err := json.Marshal(f.Info)
	if err != nil {
		f.Message += fmt.Sprintf(" (its details do not encode as JSON: %v)", err)
		return "", false
	}
	return string(b), true
}
